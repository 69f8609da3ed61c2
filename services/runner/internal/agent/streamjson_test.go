package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
)

func TestClaudeCodeParsesRecordedLines(t *testing.T) {
	t.Parallel()
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{})
	lines := readLines(t, "claude_success.jsonl")

	type want struct {
		kind    agent.Kind
		typ     string
		text    string
		isError bool
		session string
	}
	wants := []want{
		{agent.KindSystem, "system/init", "session e8889acf-5473-49e2-bd81-4896717df7c7 started with claude-sonnet-4-5-20250929 in /work/clones/42/app; MCP: zimmer connected", false, "e8889acf-5473-49e2-bd81-4896717df7c7"},
		{agent.KindAssistant, "assistant", "(thinking) The test file needs a header comment.", false, ""},
		{agent.KindAssistant, "assistant", "I'll add a comment at the top of test-file.txt.", false, ""},
		{agent.KindTool, "assistant", `→ Bash {"command":"head -1 test-file.txt","description":"Show the first line"}`, false, ""},
		{agent.KindTool, "user", "← This is a test file for Claude to modify.", false, ""},
		{agent.KindTool, "assistant", `→ mcp__zimmer__get_session {"session_id":"42"}`, false, ""},
		{agent.KindTool, "user", "← error: session 42 not found", true, ""},
		{agent.KindAssistant, "assistant", "Done. The comment is in place.", false, ""},
		{agent.KindResult, "result/success", "Done. The comment is in place.", false, "e8889acf-5473-49e2-bd81-4896717df7c7"},
	}
	require.Len(t, lines, len(wants))
	for i, line := range lines {
		ev := rt.ParseLine(line)
		require.Equal(t, wants[i], want{ev.Kind, ev.Type, ev.Text, ev.IsError, ev.RuntimeSessionID}, "line %d", i+1)
		require.Equal(t, line, ev.Raw, "the raw line is kept")
	}
}

func TestStreamJSONLineShapes(t *testing.T) {
	t.Parallel()
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{})
	cases := []struct {
		name    string
		line    string
		kind    agent.Kind
		text    string
		isError bool
	}{
		{"system other subtype", `{"type":"system","subtype":"compact_boundary","session_id":"s"}`, agent.KindSystem, "system/compact_boundary", false},
		{"assistant string content", `{"type":"assistant","message":{"role":"assistant","content":"plain"}}`, agent.KindAssistant, "plain", false},
		{"assistant text and tool", `{"type":"assistant","message":{"content":[{"type":"text","text":"Running it."},{"type":"tool_use","name":"Bash","input":{"command":"ls"}}]}}`, agent.KindAssistant, "Running it.\n→ Bash {\"command\":\"ls\"}", false},
		{"assistant no message", `{"type":"assistant"}`, agent.KindAssistant, "", false},
		{"assistant unknown block", `{"type":"assistant","message":{"content":[{"type":"redacted_thinking","data":"x"}]}}`, agent.KindTool, "(redacted_thinking)", false},
		{"user echo", `{"type":"user","message":{"role":"user","content":"do the thing"}}`, agent.KindUser, "do the thing", false},
		{"user text blocks", `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"do it"}]}}`, agent.KindUser, "do it", false},
		{"tool result blocks", `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"},{"type":"image"}]}]}}`, agent.KindTool, "← a\n(image)", false},
		{"result success", `{"type":"result","subtype":"success","is_error":false,"result":"ok"}`, agent.KindResult, "ok", false},
		{"result success but is_error", `{"type":"result","subtype":"success","is_error":true,"result":"cut off at max_tokens"}`, agent.KindResult, "turn ended in error (success: cut off at max_tokens)", true},
		{"result max turns", `{"type":"result","subtype":"error_max_turns","is_error":false,"num_turns":3}`, agent.KindResult, "turn ended in error (error_max_turns)", true},
		{"result no subtype", `{"type":"result","is_error":false,"result":"?"}`, agent.KindResult, "turn ended in error (no subtype: ?)", true},
		{"elicitation", `{"type":"elicitation","id":"elicit_demo_3","text":"Deploy to production?","requested_schema":{"type":"object"},"timeout_ms":60000,"session_id":"s"}`, agent.KindElicitation, "Deploy to production?", false},
		{"elicitation result", `{"type":"system","subtype":"elicitation_result","id":"elicit_demo_3","action":"timeout","session_id":"s"}`, agent.KindSystem, "elicitation elicit_demo_3: timeout", false},
		{"error line", `{"type":"error","text":"boom"}`, agent.KindError, "boom", true},
		{"unknown type", `{"type":"stream_event","event":{"type":"content_block_delta"}}`, agent.KindText, `{"type":"stream_event","event":{"type":"content_block_delta"}}`, false},
		{"no type", `{"hello":"world"}`, agent.KindText, `{"hello":"world"}`, false},
		{"JSON array", `[1,2,3]`, agent.KindText, `[1,2,3]`, false},
		{"garbage", `npm WARN deprecated something`, agent.KindText, `npm WARN deprecated something`, false},
		{"cut JSON", `{"type":"assistant","message":{"content":[{"type":"text","te`, agent.KindText, `{"type":"assistant","message":{"content":[{"type":"text","te`, false},
		{"empty", ``, agent.KindText, ``, false},
		{"wrong field types", `{"type":"result","is_error":"yes"}`, agent.KindText, `{"type":"result","is_error":"yes"}`, false},
		{"invalid UTF-8", "\xff\xfe not text", agent.KindText, "\xff\xfe not text", false},
	}
	for _, tc := range cases {
		ev := rt.ParseLine(tc.line)
		require.Equal(t, tc.kind, ev.Kind, tc.name)
		require.Equal(t, tc.text, ev.Text, tc.name)
		require.Equal(t, tc.isError, ev.IsError, tc.name)
		require.Equal(t, tc.line, ev.Raw, tc.name)
	}
}

func TestStreamJSONElicitation(t *testing.T) {
	t.Parallel()
	ev := agent.NewDemo(agent.DemoOptions{}).ParseLine(`{"type":"elicitation","id":"elicit_demo_3","text":"Deploy?","requested_schema":{"type":"object"},"timeout_ms":1500,"session_id":"s-1"}`)
	require.Equal(t, agent.KindElicitation, ev.Kind)
	require.Equal(t, &agent.Elicitation{ID: "elicit_demo_3", Message: "Deploy?", Timeout: 1500 * time.Millisecond,
		RequestedSchema: map[string]any{"type": "object"}}, ev.Elicitation)
	require.Equal(t, "s-1", ev.RuntimeSessionID)

	ev = agent.NewDemo(agent.DemoOptions{}).ParseLine(`{"type":"assistant","message":{"content":"hi"}}`)
	require.Nil(t, ev.Elicitation, "only elicitation lines carry one")
	require.Nil(t, ev.ElicitationResult)

	ev = agent.NewDemo(agent.DemoOptions{}).ParseLine(`{"type":"system","subtype":"elicitation_result","id":"elicit_demo_3","action":"decline","session_id":"s-1"}`)
	require.Equal(t, &agent.ElicitationResult{ID: "elicit_demo_3", Action: "decline"}, ev.ElicitationResult)
	require.Equal(t, "elicitation elicit_demo_3: decline", ev.Text)

	line, err := agent.AnswerLine("elicit_demo_3", "accept", map[string]any{"answer": "yes"})
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"elicit_demo_3","action":"accept","content":{"answer":"yes"}}`, string(line))
	require.True(t, strings.HasSuffix(string(line), "\n"), "one line")
}

func TestStreamJSONTextIsBounded(t *testing.T) {
	t.Parallel()
	rt := agent.NewClaudeCode(agent.ClaudeCodeOptions{})
	big := strings.Repeat("é", 10000)
	line := `{"type":"user","message":{"content":[{"type":"tool_result","content":"` + big + `"}]}}`
	ev := rt.ParseLine(line)
	require.Equal(t, agent.KindTool, ev.Kind)
	require.Less(t, len([]rune(ev.Text)), 4100)
	require.True(t, strings.HasSuffix(ev.Text, "…"))
	require.Equal(t, line, ev.Raw, "the raw line keeps everything")

	ev = rt.ParseLine(big)
	require.Equal(t, agent.KindText, ev.Kind)
	require.Less(t, len([]rune(ev.Text)), 4100)
	require.Equal(t, big, ev.Raw)
}

// TestRuntimesReportUsage: the usage a turn's last line reports — Claude
// Code's result line (tokens, cache, total_cost_usd), Codex's
// turn.completed (cached tokens counted inside its input tokens) — is on
// its event; a line without one has none.
func TestRuntimesReportUsage(t *testing.T) {
	t.Parallel()
	claude := agent.NewClaudeCode(agent.ClaudeCodeOptions{})
	lines := readLines(t, "claude_success.jsonl")
	require.Equal(t, &agent.Usage{InputTokens: 6, OutputTokens: 5, CacheReadTokens: 16827, CacheCreationTokens: 212, CostUSD: 0.19243785000000002},
		claude.ParseLine(lines[len(lines)-1]).Usage)
	require.Nil(t, claude.ParseLine(lines[0]).Usage, "the init line reports no usage")

	codex := agent.NewCodex(agent.CodexOptions{})
	require.Equal(t, &agent.Usage{InputTokens: 315, CacheReadTokens: 24448, OutputTokens: 122},
		codex.ParseLine(`{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}`).Usage)
	require.Nil(t, codex.ParseLine(`{"type":"turn.completed"}`).Usage)
}
