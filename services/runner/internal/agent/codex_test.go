package agent_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
)

const codexThreadID = "0199a213-81c0-7800-8aa1-bbab2a035a53"

func TestCodexCommandLines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	codex := fake(t, "fake-codex")
	mcp := []string{
		"-c", `mcp_servers.zimmer.url="` + testMCPURL + `"`,
		"-c", `mcp_servers.zimmer.bearer_token_env_var="ZIMMER_MCP_TOKEN"`,
	}

	first := b.turn("Add a header comment.")
	first.RuntimeSessionID = "" // codex names its thread itself
	l, err := agent.NewCodex(agent.CodexOptions{Path: codex, BypassSandbox: true}).Prepare(first)
	require.NoError(t, err)
	want := append([]string{codex, "exec", "--json", "--skip-git-repo-check", "--cd", b.workdir,
		"--dangerously-bypass-approvals-and-sandbox"}, mcp...)
	require.Empty(t, cmp.Diff(append(want, "-"), l.Args), "(-want +got)")
	require.Equal(t, "Add a header comment.", string(l.Stdin), "the prompt always goes on stdin")
	require.Equal(t, b.workdir, l.Dir)
	require.Contains(t, l.Env, "ZIMMER_MCP_TOKEN="+testToken)
	require.Empty(t, l.Files, "codex gets its MCP server from -c overrides, no file")

	resume := b.turn("Now add tests.")
	resume.RuntimeSessionID = codexThreadID
	resume.Resume = true
	l, err = agent.NewCodex(agent.CodexOptions{Path: codex, Model: "gpt-5-codex"}).Prepare(resume)
	require.NoError(t, err)
	want = append([]string{codex, "exec", "--json", "--skip-git-repo-check", "--cd", b.workdir,
		"--full-auto", "--model", "gpt-5-codex"}, mcp...)
	require.Empty(t, cmp.Diff(append(want, "resume", codexThreadID, "-"), l.Args), "(-want +got)")

	resume.RuntimeSessionID = ""
	_, err = agent.NewCodex(agent.CodexOptions{Path: codex}).Prepare(resume)
	require.ErrorContains(t, err, "resuming needs the thread id")

	first.Prompt = ""
	_, err = agent.NewCodex(agent.CodexOptions{Path: codex}).Prepare(first)
	require.ErrorContains(t, err, "the prompt is empty")
	first.Prompt = "hi"

	_, err = agent.NewCodex(agent.CodexOptions{Path: "zimmer-no-such-codex"}).Prepare(first)
	require.ErrorContains(t, err, "RUNNER_CODEX_PATH")
}

func TestCodexOverrideQuotesTheURL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	turn := b.turn("hi")
	turn.MCP.URL = `http://127.0.0.1:1/mcp?q="x"\y`
	l, err := agent.NewCodex(agent.CodexOptions{Path: fake(t, "fake-codex")}).Prepare(turn)
	require.NoError(t, err)
	require.Contains(t, l.Args, `mcp_servers.zimmer.url="http://127.0.0.1:1/mcp?q=\"x\"\\y"`)
}

func TestCodexAgainstFakeCLI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rt := agent.NewCodex(agent.CodexOptions{Path: fake(t, "fake-codex"), BypassSandbox: true, Model: "gpt-5-codex"})

	prompt := strings.Repeat("A long prompt line with \"quotes\" and $dollars.\n", 4000)
	for _, resume := range []bool{false, true} {
		turn := b.turn(prompt)
		turn.RuntimeSessionID = codexThreadID
		turn.Resume = resume
		l, err := rt.Prepare(turn)
		require.NoError(t, err)
		res := run(t, rt, l, "FAKE_RECORD="+b.record, "FAKE_REPLAY="+fake(t, "codex_success.jsonl"))
		require.Zero(t, res.exitCode, "the fake refused the command line: %s", res.stderr)

		args, stdin := b.recorded(t)
		require.Equal(t, l.Args[1:], args)
		require.Equal(t, prompt, stdin)
		require.Equal(t, []agent.Kind{
			agent.KindSystem, agent.KindSystem, agent.KindAssistant, agent.KindTool, agent.KindTool,
			agent.KindTool, agent.KindTool, agent.KindTool, agent.KindAssistant, agent.KindAssistant, agent.KindResult,
		}, kinds(res.events))
		require.Equal(t, codexThreadID, res.events[0].RuntimeSessionID)
		require.False(t, res.events[len(res.events)-1].IsError)
	}

	// The fake refuses what the real CLI would not get.
	l, err := rt.Prepare(b.turn("hi"))
	require.NoError(t, err)
	bad := l
	bad.Args = append(append([]string{}, l.Args[:len(l.Args)-1]...), "--ask-for-approval", "never", "-")
	res := run(t, rt, bad, "FAKE_RECORD="+b.record)
	require.Equal(t, 64, res.exitCode)
	require.Contains(t, res.stderr, "unknown argument '--ask-for-approval'")

	bad.Args = append(append([]string{}, l.Args[:len(l.Args)-1]...), "hi")
	res = run(t, rt, bad, "FAKE_RECORD="+b.record)
	require.Equal(t, 64, res.exitCode)
	require.Contains(t, res.stderr, "unknown argument 'hi'")

	bad = l
	bad.Env = append(append([]string{}, l.Env...), "ZIMMER_MCP_TOKEN=")
	res = run(t, rt, bad, "FAKE_RECORD="+b.record)
	require.Equal(t, 64, res.exitCode)
	require.Contains(t, res.stderr, "ZIMMER_MCP_TOKEN is empty")

	// A credential on the command line is caught from /proc.
	bad = l
	bad.Args = append([]string{}, l.Args...)
	for i, a := range bad.Args {
		if strings.HasPrefix(a, "mcp_servers.zimmer.url=") {
			bad.Args[i] = `mcp_servers.zimmer.url="http://127.0.0.1/mcp?token=` + testToken + `"`
		}
	}
	res = run(t, rt, bad, "FAKE_RECORD="+b.record)
	require.Equal(t, 64, res.exitCode)
	require.Contains(t, res.stderr, "the credential is on the command line")
}

func TestCodexParsesRecordedLines(t *testing.T) {
	t.Parallel()
	rt := agent.NewCodex(agent.CodexOptions{})

	type want struct {
		kind    agent.Kind
		typ     string
		text    string
		isError bool
	}
	check := func(file string, wants []want) {
		lines := readLines(t, file)
		require.Len(t, lines, len(wants), file)
		for i, line := range lines {
			ev := rt.ParseLine(line)
			require.Equal(t, wants[i], want{ev.Kind, ev.Type, ev.Text, ev.IsError}, "%s line %d", file, i+1)
			require.Equal(t, line, ev.Raw)
		}
	}
	check("codex_success.jsonl", []want{
		{agent.KindSystem, "thread.started", "thread " + codexThreadID + " started", false},
		{agent.KindSystem, "turn.started", "turn started", false},
		{agent.KindAssistant, "item.completed/reasoning", "(thinking) **Checking the test file** I should read it before editing.", false},
		{agent.KindTool, "item.started/command_execution", "$ bash -lc 'head -1 test-file.txt'", false},
		{agent.KindTool, "item.completed/command_execution", "$ bash -lc 'head -1 test-file.txt'\n(exit 0)\nThis is a test file.\n", false},
		{agent.KindTool, "item.started/mcp_tool_call", `→ zimmer.get_session {"session_id":"42"}`, false},
		{agent.KindTool, "item.completed/mcp_tool_call", "→ zimmer.get_session {\"session_id\":\"42\"}\n← {\"id\":\"42\",\"status\":\"running\"}", false},
		{agent.KindTool, "item.completed/file_change", "files: update test-file.txt", false},
		{agent.KindAssistant, "item.updated/todo_list", "plan:\n[x] Read the file\n[ ] Add the comment", false},
		{agent.KindAssistant, "item.completed/agent_message", "Added the header comment to test-file.txt.", false},
		{agent.KindResult, "turn.completed", "turn completed (24763 input tokens, 24448 cached, 122 output)", false},
	})
	check("codex_failed.jsonl", []want{
		{agent.KindSystem, "thread.started", "thread 019b341f-04d9-73b3-8263-2c05ca63d690 started", false},
		{agent.KindSystem, "turn.started", "turn started", false},
		{agent.KindTool, "item.completed/command_execution", "$ bash -lc 'invalid-command'\n(exit 127)\nbash: invalid-command: command not found\n", true},
		{agent.KindError, "item.completed/error", "model is overloaded, retrying", true},
		{agent.KindError, "error", "stream disconnected before completion: Transport error: error decoding response body", true},
		{agent.KindResult, "turn.failed", "turn failed: stream disconnected before completion: Transport error: error decoding response body", true},
	})
}

func TestCodexLineShapes(t *testing.T) {
	t.Parallel()
	rt := agent.NewCodex(agent.CodexOptions{})
	cases := []struct {
		name    string
		line    string
		kind    agent.Kind
		text    string
		isError bool
	}{
		{"mcp failure", `{"type":"item.completed","item":{"id":"i","type":"mcp_tool_call","server":"zimmer","tool":"x","arguments":null,"result":null,"error":{"message":"401"},"status":"failed"}}`, agent.KindTool, "→ zimmer.x null\n← error: 401", true},
		{"declined command", `{"type":"item.completed","item":{"type":"command_execution","command":"rm -rf /","status":"declined"}}`, agent.KindTool, "$ rm -rf /", true},
		{"failed patch", `{"type":"item.completed","item":{"type":"file_change","changes":[{"path":"a","kind":"add"}],"status":"failed"}}`, agent.KindTool, "files: add a (failed)", true},
		{"web search", `{"type":"item.started","item":{"type":"web_search","query":"go generics"}}`, agent.KindTool, "web search: go generics", false},
		{"unknown item", `{"type":"item.completed","item":{"type":"image_view","path":"x.png"}}`, agent.KindText, "(image_view)", false},
		{"item without item", `{"type":"item.completed"}`, agent.KindText, `{"type":"item.completed"}`, false},
		{"turn.completed without usage", `{"type":"turn.completed"}`, agent.KindResult, "turn completed", false},
		{"turn.failed without error", `{"type":"turn.failed"}`, agent.KindResult, "turn failed: ", true},
		{"unknown type", `{"type":"session.configured","model":"x"}`, agent.KindText, `{"type":"session.configured","model":"x"}`, false},
		{"garbage", `Reading prompt from stdin...`, agent.KindText, `Reading prompt from stdin...`, false},
		{"cut JSON", `{"type":"item.completed","item":{"ty`, agent.KindText, `{"type":"item.completed","item":{"ty`, false},
	}
	for _, tc := range cases {
		ev := rt.ParseLine(tc.line)
		require.Equal(t, tc.kind, ev.Kind, tc.name)
		require.Equal(t, tc.text, ev.Text, tc.name)
		require.Equal(t, tc.isError, ev.IsError, tc.name)
		require.Equal(t, tc.line, ev.Raw, tc.name)
	}
}
