package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// The line shapes follow Claude Code's `--output-format stream-json
// --verbose` (system init, assistant and user messages, one result), so the
// runner parses the demo agent and the real CLI alike. elicitation and the
// system subtypes grandchild and elicitation_result are the demo's own.

const demoModel = "zimmer-demo"

type usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
}

// What every turn's result line reports it used: fixed, so tests can
// assert the runner records a runtime's usage exactly (Claude Code's
// figures are the model's; the demo calls none).
var (
	turnUsage   = usage{InputTokens: 1000, OutputTokens: 100, CacheReadInputTokens: 500, CacheCreationInputTokens: 50}
	turnCostUSD = 0.0125
)

type mcpServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

type initLine struct {
	Type           string      `json:"type"`
	Subtype        string      `json:"subtype"`
	Cwd            string      `json:"cwd"`
	SessionID      string      `json:"session_id"`
	Tools          []string    `json:"tools"`
	MCPServers     []mcpServer `json:"mcp_servers"`
	Model          string      `json:"model"`
	PermissionMode string      `json:"permissionMode"`
	APIKeySource   string      `json:"apiKeySource"`
	Resumed        bool        `json:"resumed,omitempty"`
}

type message struct {
	ID           string  `json:"id,omitempty"`
	Type         string  `json:"type,omitempty"`
	Role         string  `json:"role"`
	Model        string  `json:"model,omitempty"`
	Content      []any   `json:"content"`
	StopReason   *string `json:"stop_reason,omitempty"`
	StopSequence *string `json:"stop_sequence,omitempty"`
	Usage        *usage  `json:"usage,omitempty"`
}

type messageLine struct {
	Type            string  `json:"type"` // assistant or user
	Message         message `json:"message"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	SessionID       string  `json:"session_id"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolUseBlock struct {
	Type  string         `json:"type"`
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

type toolResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   any    `json:"content"` // a string, or MCP content blocks
	IsError   bool   `json:"is_error"`
}

type resultLine struct {
	Type          string  `json:"type"`
	Subtype       string  `json:"subtype"`
	IsError       bool    `json:"is_error"`
	DurationMS    int64   `json:"duration_ms"`
	DurationAPIMS int64   `json:"duration_api_ms"`
	NumTurns      int     `json:"num_turns"`
	Result        string  `json:"result"`
	SessionID     string  `json:"session_id"`
	TotalCostUSD  float64 `json:"total_cost_usd"`
	Usage         usage   `json:"usage"`
}

// elicitationLine reports that the agent is blocked on an MCP elicitation.
// Its text is "text", not "message": "message" is an object on the other
// line types, and one parser reads them all.
type elicitationLine struct {
	Type            string         `json:"type"` // elicitation
	ID              string         `json:"id"`
	Text            string         `json:"text"`
	RequestedSchema map[string]any `json:"requested_schema"`
	TimeoutMS       int64          `json:"timeout_ms"`
	SessionID       string         `json:"session_id"`
}

// elicitationResultLine reports how the elicitation ended: accept (with
// content), decline or cancel from an answer on stdin, or timeout.
type elicitationResultLine struct {
	Type      string         `json:"type"`    // system
	Subtype   string         `json:"subtype"` // elicitation_result
	ID        string         `json:"id"`
	Action    string         `json:"action"`
	Content   map[string]any `json:"content,omitempty"`
	SessionID string         `json:"session_id"`
}

// grandchildLine names the process spawn-grandchild started.
type grandchildLine struct {
	Type      string `json:"type"`    // system
	Subtype   string `json:"subtype"` // grandchild
	PID       int    `json:"pid"`
	SessionID string `json:"session_id"`
}

// transcript writes one JSON object per line, each in a single write.
type transcript struct {
	mu        sync.Mutex
	w         io.Writer
	sessionID string
	seq       int
}

func (t *transcript) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode transcript line: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := t.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write transcript line: %w", err)
	}
	return nil
}

// nextID numbers the agent's messages, tool calls and elicitations.
func (t *transcript) nextID(prefix string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	return fmt.Sprintf("%s_demo_%d", prefix, t.seq)
}

func (t *transcript) assistant(content ...any) error {
	return t.write(messageLine{
		Type: "assistant",
		Message: message{ID: t.nextID("msg"), Type: "message", Role: "assistant", Model: demoModel,
			Content: content, Usage: &usage{}},
		SessionID: t.sessionID,
	})
}

func (t *transcript) toolResult(toolUseID string, content any, isError bool) error {
	return t.write(messageLine{
		Type: "user",
		Message: message{Role: "user", Content: []any{
			toolResultBlock{Type: "tool_result", ToolUseID: toolUseID, Content: content, IsError: isError},
		}},
		SessionID: t.sessionID,
	})
}
