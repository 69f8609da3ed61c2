package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// This file parses Claude Code's stream-json output (`claude -p
// --output-format stream-json --verbose`), one JSON object per line, which
// the demo agent imitates:
//
//	{"type":"system","subtype":"init","session_id":"…","model":"…","cwd":"…","mcp_servers":[{"name":"zimmer","status":"connected"}],…}
//	{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"…"},{"type":"tool_use","id":"toolu_…","name":"Bash","input":{…}}]},"session_id":"…"}
//	{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_…","content":"…","is_error":false}]},"session_id":"…"}
//	{"type":"result","subtype":"success","is_error":false,"result":"…","session_id":"…","num_turns":3,…}
//
// A result whose subtype is not "success" (error_max_turns,
// error_during_execution) ended the turn in error even when is_error is
// false, as the CLI prints it for an API error; is_error true on a
// "success" (a response cut off at max_tokens) is an error too. The demo
// agent adds {"type":"elicitation",…} lines. testdata/claude_*.jsonl holds
// recorded lines of every shape.

// streamLine is the union of the stream-json line fields this package reads.
type streamLine struct {
	Type       string          `json:"type"`
	Subtype    string          `json:"subtype"`
	SessionID  string          `json:"session_id"`
	Model      string          `json:"model"`
	Cwd        string          `json:"cwd"`
	MCPServers []mcpServerInfo `json:"mcp_servers"`
	Message    *streamMessage  `json:"message"`
	IsError    bool            `json:"is_error"`
	Result     string          `json:"result"`
	Errors     []string        `json:"errors"`
	NumTurns   int             `json:"num_turns"`
	// The demo agent's elicitation line:
	// {"type":"elicitation","id":"…","text":"…","requested_schema":{…},"timeout_ms":60000,"session_id":"…"}
	ID              string         `json:"id"`
	Text            string         `json:"text"`
	TimeoutMS       int64          `json:"timeout_ms"`
	RequestedSchema map[string]any `json:"requested_schema"`
	// ... and its result line:
	// {"type":"system","subtype":"elicitation_result","id":"…","action":"accept|decline|cancel|timeout",…}
	Action string `json:"action"`
	// Error is set on the synthetic assistant message the CLI prints for
	// a wall ("rate_limit", "authentication_failed"); a string, though a
	// line of another shape may carry an object there.
	Error json.RawMessage `json:"error"`
	// RateLimitInfo is a rate_limit_event's:
	// {"type":"rate_limit_event","rate_limit_info":{"status":"allowed|allowed_warning|rejected","resetsAt":1755615600,"rateLimitType":"five_hour"},…}
	RateLimitInfo *rateLimitInfo `json:"rate_limit_info"`
	// The result line's report of what the turn used.
	TotalCostUSD *float64     `json:"total_cost_usd"`
	Usage        *claudeUsage `json:"usage"`
}

type claudeUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// usage is the result line's report, nil when it has none.
func (l streamLine) usage() *Usage {
	if l.Usage == nil && l.TotalCostUSD == nil {
		return nil
	}
	u := &Usage{}
	if l.Usage != nil {
		u.InputTokens, u.OutputTokens = l.Usage.InputTokens, l.Usage.OutputTokens
		u.CacheReadTokens, u.CacheCreationTokens = l.Usage.CacheReadInputTokens, l.Usage.CacheCreationInputTokens
	}
	if l.TotalCostUSD != nil {
		u.CostUSD = *l.TotalCostUSD
	}
	return u
}

type rateLimitInfo struct {
	Status        string `json:"status"`
	ResetsAt      int64  `json:"resetsAt"`
	RateLimitType string `json:"rateLimitType"`
}

type mcpServerInfo struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

type streamMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// contentBlock is one block of a message's content.
type contentBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// parseStreamJSON turns one stream-json line into an event.
func parseStreamJSON(line string) Event {
	var l streamLine
	if err := json.Unmarshal([]byte(line), &l); err != nil || l.Type == "" {
		return textEvent(line)
	}
	raw := line
	switch l.Type {
	case "system":
		ev := Event{Kind: KindSystem, Type: join("system", l.Subtype), Text: clip(systemText(l)), Raw: raw, RuntimeSessionID: l.SessionID}
		if l.Subtype == "elicitation_result" && l.ID != "" {
			ev.ElicitationResult = &ElicitationResult{ID: l.ID, Action: l.Action}
		}
		return ev
	case "assistant":
		kind, text := assistantText(l.Message)
		ev := Event{Kind: kind, Type: "assistant", Text: clip(text), Raw: raw, ToolCalls: toolCalls(l.Message)}
		if code := errorCode(l.Error); code != "" {
			// The CLI's own message standing for a refused request, not
			// the model's words.
			ev.IsError, ev.Wall = true, assistantWall(code, text)
		}
		return ev
	case "user":
		kind, text, isErr := userText(l.Message)
		return Event{Kind: kind, Type: "user", Text: clip(text), Raw: raw, IsError: isErr, ToolResults: toolResults(l.Message)}
	case "result":
		isErr := l.IsError || l.Subtype != "success"
		ev := Event{Kind: KindResult, Type: join("result", l.Subtype), Text: clip(resultText(l, isErr)), Raw: raw, IsError: isErr,
			RuntimeSessionID: l.SessionID, Usage: l.usage()}
		if isErr {
			ev.Wall = claudeWallText(strings.Join(append([]string{l.Result}, l.Errors...), " "))
		}
		return ev
	case "rate_limit_event":
		return rateLimitEvent(l.RateLimitInfo, raw)
	case "elicitation":
		e := &Elicitation{ID: l.ID, Message: l.Text, Timeout: time.Duration(l.TimeoutMS) * time.Millisecond, RequestedSchema: l.RequestedSchema}
		return Event{Kind: KindElicitation, Type: "elicitation", Text: clip(l.Text), Raw: raw, RuntimeSessionID: l.SessionID, Elicitation: e}
	case "error":
		text := firstNonEmpty(l.Text, l.Result, raw)
		return Event{Kind: KindError, Type: "error", Text: clip(text), Raw: raw, IsError: true, Wall: claudeWallText(text)}
	default:
		return textEvent(line)
	}
}

// errorCode reads the error code of a synthetic assistant message ("" when
// the field is absent or not a string).
func errorCode(raw json.RawMessage) string {
	var code string
	if len(raw) == 0 || json.Unmarshal(raw, &code) != nil {
		return ""
	}
	return code
}

// assistantWall is the wall a synthetic assistant message stands for: its
// text's, else the one its error code names (nil for other errors).
func assistantWall(code, text string) *Wall {
	if w := claudeWallText(text); w != nil {
		return w
	}
	switch code {
	case "rate_limit":
		return &Wall{Kind: WallQuota, Message: clip(text)}
	case "authentication_failed", "billing_error":
		return &Wall{Kind: WallAuth, Message: clip(text)}
	}
	return nil
}

// rateLimitEvent renders a rate_limit_event: informational while the
// request was allowed, a wall when it was rejected.
func rateLimitEvent(info *rateLimitInfo, raw string) Event {
	ev := Event{Kind: KindSystem, Type: "rate_limit_event", Raw: raw, Text: "rate limit"}
	if info == nil {
		return ev
	}
	ev.Text = fmt.Sprintf("rate limit %s: %s", firstNonEmpty(info.RateLimitType, "unnamed"), firstNonEmpty(info.Status, "unknown"))
	if info.Status != "rejected" {
		return ev
	}
	w := &Wall{Kind: WallQuota, Message: ev.Text}
	if info.ResetsAt > 0 {
		w.ResetAt = time.Unix(info.ResetsAt, 0).UTC()
		ev.Text += "; resets at " + w.ResetAt.Format(time.RFC3339)
		w.Message = ev.Text
	}
	ev.Wall, ev.IsError = w, true
	return ev
}

func systemText(l streamLine) string {
	if l.Subtype == "elicitation_result" && l.ID != "" {
		return fmt.Sprintf("elicitation %s: %s", l.ID, l.Action)
	}
	if l.Subtype != "init" {
		return join("system", l.Subtype)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "session %s started", l.SessionID)
	if l.Model != "" {
		fmt.Fprintf(&b, " with %s", l.Model)
	}
	if l.Cwd != "" {
		fmt.Fprintf(&b, " in %s", l.Cwd)
	}
	if len(l.MCPServers) > 0 {
		servers := make([]string, 0, len(l.MCPServers))
		for _, s := range l.MCPServers {
			servers = append(servers, s.Name+" "+s.Status)
		}
		fmt.Fprintf(&b, "; MCP: %s", strings.Join(servers, ", "))
	}
	return b.String()
}

// assistantText renders an assistant message: its text and thinking, and a
// line per tool call. A message of tool calls only is a tool event.
func assistantText(m *streamMessage) (Kind, string) {
	if m == nil {
		return KindAssistant, ""
	}
	blocks, plain := contentBlocks(m.Content)
	if blocks == nil {
		return KindAssistant, plain
	}
	var parts []string
	talked := false
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
			talked = true
		case "thinking":
			parts = append(parts, "(thinking) "+b.Thinking)
			talked = true
		case "tool_use", "server_tool_use":
			parts = append(parts, "→ "+b.Name+" "+compactJSON(b.Input))
		default:
			parts = append(parts, "("+b.Type+")")
		}
	}
	kind := KindTool
	if talked || len(blocks) == 0 {
		kind = KindAssistant
	}
	return kind, strings.Join(parts, "\n")
}

// userText renders a user line: tool results (a tool event, in error when
// any result is) or the user's own text echoed back.
func userText(m *streamMessage) (Kind, string, bool) {
	if m == nil {
		return KindUser, "", false
	}
	blocks, plain := contentBlocks(m.Content)
	if blocks == nil {
		return KindUser, plain, false
	}
	var parts []string
	tool, isErr := false, false
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			tool = true
			isErr = isErr || b.IsError
			prefix := "← "
			if b.IsError {
				prefix = "← error: "
			}
			parts = append(parts, prefix+blockContentText(b.Content))
		case "text":
			parts = append(parts, b.Text)
		default:
			parts = append(parts, "("+b.Type+")")
		}
	}
	if tool {
		return KindTool, strings.Join(parts, "\n"), isErr
	}
	return KindUser, strings.Join(parts, "\n"), false
}

// toolCalls lists an assistant message's tool calls.
func toolCalls(m *streamMessage) []ToolCall {
	if m == nil {
		return nil
	}
	blocks, _ := contentBlocks(m.Content)
	var out []ToolCall
	for _, b := range blocks {
		if b.Type == "tool_use" || b.Type == "server_tool_use" {
			out = append(out, ToolCall{ID: b.ID, Name: b.Name, Input: b.Input})
		}
	}
	return out
}

// toolResults lists a user message's tool results, whole (not clipped).
func toolResults(m *streamMessage) []ToolResult {
	if m == nil {
		return nil
	}
	blocks, _ := contentBlocks(m.Content)
	var out []ToolResult
	for _, b := range blocks {
		if b.Type == "tool_result" {
			out = append(out, ToolResult{ToolUseID: b.ToolUseID, Text: blockContentText(b.Content), IsError: b.IsError})
		}
	}
	return out
}

func resultText(l streamLine, isErr bool) string {
	if !isErr {
		return l.Result
	}
	reason := firstNonEmpty(l.Subtype, "no subtype")
	if len(l.Errors) > 0 {
		reason += ": " + strings.Join(l.Errors, "; ")
	}
	if l.Result != "" {
		reason += ": " + l.Result
	}
	return "turn ended in error (" + reason + ")"
}

// contentBlocks reads message content, which is either a string or a list
// of blocks: it returns the blocks, or nil and the string.
func contentBlocks(raw json.RawMessage) ([]contentBlock, string) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return nil, s
	}
	var blocks []contentBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, string(raw)
	}
	if blocks == nil {
		blocks = []contentBlock{}
	}
	return blocks, ""
}

// blockContentText renders a tool result's content: a string or a list of
// text blocks.
func blockContentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	blocks, plain := contentBlocks(raw)
	if blocks == nil {
		return plain
	}
	texts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		} else {
			texts = append(texts, "("+b.Type+")")
		}
	}
	return strings.Join(texts, "\n")
}

func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func join(typ, subtype string) string {
	if subtype == "" {
		return typ
	}
	return typ + "/" + subtype
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
