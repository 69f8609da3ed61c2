package main

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

func TestParseScript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		prompt string
		want   []step
	}{
		{"empty", "", nil},
		{"blank only", "\n  \n", nil},
		{"text lines become one message", "\nfix the bug\nin main.go\n\n",
			[]step{{line: 2, kind: "text", text: "fix the bug\nin main.go"}}},
		{"directives split text", "a\n@demo say b\nc\r\n",
			[]step{{line: 1, kind: "text", text: "a"}, {line: 2, kind: "say", text: "b"}, {line: 3, kind: "text", text: "c"}}},
		{"indented directive", "  @demo sleep 1.5s", []step{{line: 1, kind: "sleep", duration: 1500 * time.Millisecond}}},
		{"not a directive", "@demonstrate this", []step{{line: 1, kind: "text", text: "@demonstrate this"}}},
		{"exit", "@demo exit 3", []step{{line: 1, kind: "exit", code: 3}}},
		{"signal by name", "@demo signal SIGKILL", []step{{line: 1, kind: "signal", signal: syscall.SIGKILL}}},
		{"signal short name", "@demo signal segv", []step{{line: 1, kind: "signal", signal: syscall.SIGSEGV}}},
		{"signal number", "@demo signal 15", []step{{line: 1, kind: "signal", signal: syscall.SIGTERM}}},
		{"ignore-sigterm", "@demo ignore-sigterm", []step{{line: 1, kind: "ignore-sigterm"}}},
		{"spawn-grandchild", "@demo spawn-grandchild 60s", []step{{line: 1, kind: "spawn-grandchild", duration: time.Minute}}},
		{"mcp with args", `@demo mcp get_session {"id": 42, "include_transcript": true}`,
			[]step{{line: 1, kind: "mcp", tool: "get_session", args: map[string]any{"id": 42.0, "include_transcript": true}}}},
		{"mcp without args", "@demo mcp quick_search_sessions", []step{{line: 1, kind: "mcp", tool: "quick_search_sessions", args: map[string]any{}}}},
		{"elicit with text", "@demo elicit 2m Deploy now?", []step{{line: 1, kind: "elicit", duration: 2 * time.Minute, text: "Deploy now?"}}},
		{"pr-create", "@demo pr-create https://github.com/acme/app/pull/7",
			[]step{{line: 1, kind: "pr-create", pr: rules.PullRequestRef{Owner: "acme", Repo: "app", Number: 7}}}},
		{"elicit without text", "@demo elicit 1s", []step{{line: 1, kind: "elicit", duration: time.Second, text: "The demo agent needs an answer to continue."}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseScript(tt.prompt)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseScriptRejectsMalformedDirectives(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"ok\n@demo dance":                "prompt line 2",
		"@demo":                          `unknown directive ""`,
		"@demo say":                      "say needs text",
		"@demo sleep forever":            "want a duration",
		"@demo sleep -1s":                "negative duration",
		"@demo exit three":               "exit:",
		"@demo exit 256":                 "not 0–255",
		"@demo signal SIGNOPE":           `unknown signal "SIGNOPE"`,
		"@demo ignore-sigterm please":    "takes no argument",
		"@demo pr-create acme/app#7":     "not a GitHub pull request address",
		"@demo spawn-grandchild":         "spawn-grandchild:",
		"@demo mcp":                      "mcp needs a tool name",
		"@demo mcp get_session [1]":      "must be a JSON object",
		"@demo mcp get_session {broken}": "must be a JSON object",
		"@demo elicit soon":              "elicit:",
	}
	for prompt, want := range tests {
		t.Run(prompt, func(t *testing.T) {
			t.Parallel()
			_, err := parseScript(prompt)
			require.ErrorContains(t, err, want)
		})
	}
}

func TestParseAnswer(t *testing.T) {
	t.Parallel()
	_, action, content := parseAnswer("ship it")
	require.Equal(t, "accept", action)
	require.Equal(t, map[string]any{"answer": "ship it"}, content)

	_, action, content = parseAnswer(`{"action":"decline"}`)
	require.Equal(t, "decline", action)
	require.Nil(t, content)

	_, action, content = parseAnswer(`{"action":"accept","content":{"answer":"yes"}}`)
	require.Equal(t, "accept", action)
	require.Equal(t, map[string]any{"answer": "yes"}, content)

	_, action, _ = parseAnswer(`{"answer":"no action field"}`)
	require.Equal(t, "accept", action)

	// The runner's answers name the elicitation they answer.
	id, action, _ := parseAnswer(`{"id":"elicit_demo_3","action":"cancel"}`)
	require.Equal(t, "elicit_demo_3", id)
	require.Equal(t, "cancel", action)
}
