package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
)

func TestClaudeCodeFirstTurnCommandLine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	claude := fake(t, "fake-claude")
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: claude, SkipPermissions: true, Model: "sonnet"})

	l, err := rt.Prepare(b.turn("Add a header comment."))
	require.NoError(t, err)

	config := filepath.Join(b.stateDir, "claude-mcp.json")
	want := []string{
		claude, "-p", "--output-format", "stream-json", "--verbose",
		"--session-id", testRuntimeUUID,
		"--dangerously-skip-permissions",
		"--model", "sonnet",
		"--mcp-config", config,
		"--", "Add a header comment.",
	}
	require.Empty(t, cmp.Diff(want, l.Args), "(-want +got)")
	require.Equal(t, b.workdir, l.Dir)
	require.Nil(t, l.Stdin, "a short prompt is an argument, and stdin stays empty")
	require.Contains(t, l.Env, "ZIMMER_SESSION_ID=42")
	require.Contains(t, l.Env, "ZIMMER_MCP_URL="+testMCPURL)
	for _, kv := range l.Env {
		require.NotContains(t, kv, testToken, "claude reads the credential from its MCP configuration only")
	}
	require.Len(t, l.Files, 1)
	require.Equal(t, config, l.Files[0].Path)
}

func TestClaudeCodeResumeCommandLine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	claude := fake(t, "fake-claude")
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: claude, Model: "sonnet"})

	turn := b.turn("-v is not a flag here")
	turn.Resume = true
	turn.Model = "opus"
	l, err := rt.Prepare(turn)
	require.NoError(t, err)

	want := []string{
		claude, "-p", "--output-format", "stream-json", "--verbose",
		"--resume", testRuntimeUUID,
		"--model", "opus",
		"--mcp-config", filepath.Join(b.stateDir, "claude-mcp.json"),
		"--", "-v is not a flag here",
	}
	require.Empty(t, cmp.Diff(want, l.Args), "(-want +got)")
}

func TestClaudeCodeMCPConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: fake(t, "fake-claude")})
	l, err := rt.Prepare(b.turn("hi"))
	require.NoError(t, err)

	// A configuration left by an earlier turn, readable by others, is
	// replaced by one only the runner's user can read.
	require.NoError(t, os.MkdirAll(b.stateDir, 0o755))
	require.NoError(t, os.WriteFile(l.Files[0].Path, []byte("stale"), 0o644))
	require.NoError(t, l.WriteFiles())

	info, err := os.Stat(l.Files[0].Path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	data, err := os.ReadFile(l.Files[0].Path)
	require.NoError(t, err)
	var config map[string]any
	require.NoError(t, json.Unmarshal(data, &config))
	want := map[string]any{
		"mcpServers": map[string]any{
			"zimmer": map[string]any{
				"type":    "http",
				"url":     testMCPURL,
				"headers": map[string]any{"Authorization": "Bearer " + testToken},
			},
		},
	}
	require.Empty(t, cmp.Diff(want, config), "(-want +got)")

	require.NoError(t, l.RemoveFiles())
	_, err = os.Stat(l.Files[0].Path)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, l.RemoveFiles(), "removing twice is fine")
}

func TestClaudeCodeLargePromptGoesOnStdin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	claude := fake(t, "fake-claude")
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: claude})

	large := strings.Repeat("Refactor the parser, keep \"quotes\" and\nnewlines. ", agent.DefaultPromptArgMax/40)
	require.Greater(t, len(large), agent.DefaultPromptArgMax)
	withNUL := "a prompt with a \x00 cannot be an argument"

	for name, prompt := range map[string]string{"large": large, "NUL": withNUL} {
		l, err := rt.Prepare(b.turn(prompt))
		require.NoError(t, err, name)
		require.Equal(t, []string{"--mcp-config", filepath.Join(b.stateDir, "claude-mcp.json"), "--input-format", "stream-json"},
			l.Args[len(l.Args)-4:], name)
		require.NotContains(t, l.Args, "--", name)
		for _, a := range l.Args {
			require.NotContains(t, a, "Refactor the parser", name)
		}
		var msg struct {
			Type    string `json:"type"`
			Message struct {
				Role    string `json:"role"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
		}
		require.True(t, strings.HasSuffix(string(l.Stdin), "}\n"), "one newline-terminated JSON line")
		require.NoError(t, json.Unmarshal(l.Stdin, &msg), name)
		require.Equal(t, "user", msg.Type)
		require.Equal(t, "user", msg.Message.Role)
		require.Len(t, msg.Message.Content, 1)
		require.Equal(t, "text", msg.Message.Content[0].Type)
		require.Equal(t, prompt, msg.Message.Content[0].Text, name)
	}

	// The fake checks the flags; the stdin it read is the message.
	l, err := rt.Prepare(b.turn(large))
	require.NoError(t, err)
	res := run(t, rt, l, "FAKE_RECORD="+b.record)
	require.Zero(t, res.exitCode, res.stderr)
	_, stdin := b.recorded(t)
	require.Equal(t, string(l.Stdin), stdin)
}

func TestClaudeCodePromptArgMaxIsConfigurable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: fake(t, "fake-claude"), PromptArgMax: 10})
	l, err := rt.Prepare(b.turn("0123456789"))
	require.NoError(t, err)
	require.Nil(t, l.Stdin)
	l, err = rt.Prepare(b.turn("0123456789A"))
	require.NoError(t, err)
	require.NotNil(t, l.Stdin)
}

func TestClaudeCodeAgainstFakeCLI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: fake(t, "fake-claude"), SkipPermissions: true})

	for _, resume := range []bool{false, true} {
		turn := b.turn("Add a header comment.")
		turn.Resume = resume
		l, err := rt.Prepare(turn)
		require.NoError(t, err)
		res := run(t, rt, l, "FAKE_RECORD="+b.record, "FAKE_REPLAY="+fake(t, "claude_success.jsonl"))
		require.Zero(t, res.exitCode, "the fake refused the command line: %s", res.stderr)

		args, stdin := b.recorded(t)
		require.Equal(t, l.Args[1:], args)
		require.Empty(t, stdin, "the prompt was an argument; stdin must be empty")
		require.Equal(t, []agent.Kind{
			agent.KindSystem, agent.KindAssistant, agent.KindAssistant, agent.KindTool, agent.KindTool,
			agent.KindTool, agent.KindTool, agent.KindAssistant, agent.KindResult,
		}, kinds(res.events))
		last := res.events[len(res.events)-1]
		require.False(t, last.IsError)
		require.Equal(t, "Done. The comment is in place.", last.Text)
	}
}

func TestClaudeCodeFakeCLIRefusesAWrongFlag(t *testing.T) {
	t.Parallel()
	// The fake must fail loudly on a flag the real CLI is not given, or the
	// command-line tests above prove nothing.
	b := setup(t)
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: fake(t, "fake-claude")})
	l, err := rt.Prepare(b.turn("hi"))
	require.NoError(t, err)

	bad := l
	bad.Args = append([]string{l.Args[0], "-p", "--output-format", "json"}, l.Args[4:]...)
	res := run(t, rt, bad, "FAKE_RECORD="+b.record)
	require.Equal(t, 64, res.exitCode)
	require.Contains(t, res.stderr, "--output-format must be stream-json")

	bad.Args = append(append([]string{}, l.Args[:len(l.Args)-2]...), "--max-turns", "3", "--", "hi")
	res = run(t, rt, bad, "FAKE_RECORD="+b.record)
	require.Equal(t, 64, res.exitCode)
	require.Contains(t, res.stderr, "unknown argument '--max-turns'")

	// A credential on the command line is caught from /proc.
	bad.Args = append(append([]string{}, l.Args[:len(l.Args)-1]...), "use "+testToken)
	res = run(t, rt, bad, "FAKE_RECORD="+b.record)
	require.Equal(t, 64, res.exitCode)
	require.Contains(t, res.stderr, "the credential is on the command line")

	// So is the runner's own environment, had Environ let it through.
	res = run(t, rt, l, "FAKE_RECORD="+b.record)
	require.Zero(t, res.exitCode, res.stderr)
	bad = l
	bad.Env = append(append([]string{}, l.Env...), "ZIMMER_INTERNAL_TOKEN="+operatorKey)
	res = run(t, rt, bad, "FAKE_RECORD="+b.record)
	require.Equal(t, 64, res.exitCode)
	require.Contains(t, res.stderr, "inherited the runner's keys")
}

func TestClaudeCodeTurnEndingInError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: fake(t, "fake-claude")})
	l, err := rt.Prepare(b.turn("hi"))
	require.NoError(t, err)
	res := run(t, rt, l, "FAKE_RECORD="+b.record, "FAKE_REPLAY="+fake(t, "claude_error.jsonl"), "FAKE_EXIT=1")
	require.Equal(t, 1, res.exitCode, res.stderr)
	require.Equal(t, []agent.Kind{agent.KindSystem, agent.KindResult}, kinds(res.events))
	require.Contains(t, res.events[0].Text, "MCP: zimmer failed")
	result := res.events[1]
	require.True(t, result.IsError, "error_during_execution ends the turn in error though is_error is false")
	require.Equal(t, "result/error_during_execution", result.Type)
	require.Equal(t, "turn ended in error (error_during_execution: API Error: 529 overloaded_error)", result.Text)
	require.Equal(t, "f18f49de-5b8f-4261-99c4-dbbaa6ae0e24", result.RuntimeSessionID)
}

func TestClaudeCodeRefusesABadTurn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: fake(t, "fake-claude")})
	cases := map[string]struct {
		edit func(*agent.Turn)
		want string
	}{
		"not a UUID":        {func(tr *agent.Turn) { tr.RuntimeSessionID = "session-42" }, "is not a UUID"},
		"no runtime id":     {func(tr *agent.Turn) { tr.RuntimeSessionID = "" }, "is not a UUID"},
		"state in clone":    {func(tr *agent.Turn) { tr.StateDir = filepath.Join(tr.Workdir, ".zimmer") }, "lies inside the workdir"},
		"state is clone":    {func(tr *agent.Turn) { tr.StateDir = tr.Workdir + "/." }, "lies inside the workdir"},
		"no credential":     {func(tr *agent.Turn) { tr.MCP.Token = "" }, "no session credential"},
		"no MCP URL":        {func(tr *agent.Turn) { tr.MCP.URL = "" }, "no MCP endpoint URL"},
		"no workdir":        {func(tr *agent.Turn) { tr.Workdir = "" }, "no workdir"},
		"no state dir":      {func(tr *agent.Turn) { tr.StateDir = "" }, "no state directory"},
		"empty prompt":      {func(tr *agent.Turn) { tr.Prompt = " \n" }, "the prompt is empty"},
		"sibling is fine":   {func(tr *agent.Turn) { tr.StateDir = tr.Workdir + "-state" }, ""},
		"parent is outside": {func(tr *agent.Turn) { tr.StateDir = filepath.Dir(tr.Workdir) + "/state" }, ""},
	}
	for name, tc := range cases {
		turn := b.turn("hi")
		tc.edit(&turn)
		_, err := rt.Prepare(turn)
		if tc.want == "" {
			require.NoError(t, err, name)
			continue
		}
		require.ErrorContains(t, err, tc.want, name)
	}

	missing := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: "zimmer-no-such-claude"})
	_, err := missing.Prepare(b.turn("hi"))
	require.ErrorContains(t, err, "RUNNER_CLAUDE_PATH")
}

func TestClaudeCodeTokenNeverInArguments(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{Path: fake(t, "fake-claude"), SkipPermissions: true})
	for _, prompt := range []string{"short", strings.Repeat("x", agent.DefaultPromptArgMax+1)} {
		l, err := rt.Prepare(b.turn(prompt))
		require.NoError(t, err)
		for _, a := range l.Args {
			require.NotContains(t, a, testToken)
		}
		require.NotContains(t, string(l.Stdin), testToken)
	}
}
