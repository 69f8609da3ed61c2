package agent_test

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
)

func TestDemoCommandLine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sh, err := exec.LookPath("sh") // any program: Prepare only resolves it
	require.NoError(t, err)
	rt := agent.NewDemo(agent.DemoOptions{Path: sh})

	l, err := rt.Prepare(b.turn("@demo say hi"))
	require.NoError(t, err)
	prompt := filepath.Join(b.stateDir, "demo-prompt.txt")
	require.Equal(t, []string{sh, "--prompt-file", prompt, "--session-id", testRuntimeUUID}, l.Args)
	require.Nil(t, l.Stdin, "stdin stays free for elicitation answers")
	require.True(t, l.TakesAnswers, "and open for them")
	require.Equal(t, []agent.File{{Path: prompt, Contents: []byte("@demo say hi")}}, l.Files)
	require.Contains(t, l.Env, "ZIMMER_MCP_TOKEN="+testToken)
	require.Contains(t, l.Env, "ZIMMER_MCP_URL="+testMCPURL)

	turn := b.turn("again")
	turn.Resume = true
	l, err = rt.Prepare(turn)
	require.NoError(t, err)
	require.Equal(t, []string{sh, "--prompt-file", prompt, "--session-id", testRuntimeUUID, "--resume"}, l.Args)

	_, err = agent.NewDemo(agent.DemoOptions{Path: "zimmer-no-such-demo"}).Prepare(turn)
	require.ErrorContains(t, err, "RUNNER_DEMO_AGENT_PATH")
}

// TestDemoAgainstTheDemoAgent runs the project's demo agent, built from
// cmd/zimmer-demo-agent, through the demo runtime: the flags are the ones it
// accepts (it exits 2 on any other) and its lines parse as the runner needs.
func TestDemoAgainstTheDemoAgent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the demo agent")
	}
	bin := filepath.Join(t.TempDir(), "zimmer-demo-agent")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/zimmerhq/zimmer/services/runner/cmd/zimmer-demo-agent")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build the demo agent: %s", out)
	rt := agent.NewDemo(agent.DemoOptions{Path: bin})
	b := setup(t)

	l, err := rt.Prepare(b.turn("Hello there.\n@demo elicit 50ms Deploy to production?\n@demo say done"))
	require.NoError(t, err)
	res := run(t, rt, l)
	require.Zero(t, res.exitCode, res.stderr)
	require.Equal(t, []agent.Kind{
		agent.KindSystem, agent.KindAssistant, agent.KindElicitation, agent.KindSystem, agent.KindAssistant, agent.KindResult,
	}, kinds(res.events))
	require.Equal(t, testRuntimeUUID, res.events[0].RuntimeSessionID)
	require.Equal(t, "Hello there.", res.events[1].Text)
	elicit := res.events[2]
	require.Equal(t, "Deploy to production?", elicit.Elicitation.Message)
	require.Equal(t, 50*time.Millisecond, elicit.Elicitation.Timeout)
	require.NotEmpty(t, elicit.Elicitation.ID)
	require.Equal(t, "system/elicitation_result", res.events[3].Type)
	require.False(t, res.events[5].IsError)

	turn := b.turn("@demo exit 3")
	turn.Resume = true
	l, err = rt.Prepare(turn)
	require.NoError(t, err)
	res = run(t, rt, l)
	require.Equal(t, 3, res.exitCode, res.stderr)
	last := res.events[len(res.events)-1]
	require.Equal(t, agent.KindResult, last.Kind)
	require.True(t, last.IsError)
}
