package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// CodexOptions configure the codex runtime.
type CodexOptions struct {
	// Path is the codex CLI: a name looked up on PATH or a path.
	Path string
	// Model is passed as --model unless empty or overridden by the turn.
	Model string
	// BypassSandbox passes --dangerously-bypass-approvals-and-sandbox, the
	// counterpart of claude's --dangerously-skip-permissions; without it the
	// turn runs with --full-auto (writes inside the workdir, sandboxed).
	BypassSandbox bool
}

// Codex runs the Codex CLI's non-interactive mode:
//
//	codex exec --json --skip-git-repo-check --cd <workdir> [--dangerously-bypass-approvals-and-sandbox|--full-auto] [--model M] -c mcp_servers.zimmer.url="<url>" -c mcp_servers.zimmer.bearer_token_env_var="ZIMMER_MCP_TOKEN" -
//
// and `… resume <thread id> -` on later turns. The prompt always goes on
// stdin ("-"). Codex takes MCP servers only from configuration: rather than
// a CODEX_HOME of our own with a config.toml (which would hide the user's
// login, ~/.codex/auth.json, and the recorded sessions that resume reads),
// the server is added with -c overrides, and the credential is read by codex
// from the environment variable it is named in (bearer_token_env_var), so
// it appears in no argument and no file. Codex picks the thread id itself on
// the first turn and reports it on its thread.started line.
type Codex struct {
	opts CodexOptions
}

// NewCodex returns the codex runtime.
func NewCodex(opts CodexOptions) *Codex { return &Codex{opts: opts} }

// Name implements Runtime.
func (c *Codex) Name() string { return RuntimeCodex }

// Prepare implements Runtime.
func (c *Codex) Prepare(turn Turn) (Launch, error) {
	if err := checkTurn(turn); err != nil {
		return Launch{}, fmt.Errorf("prepare codex turn: %w", err)
	}
	if strings.TrimSpace(turn.Prompt) == "" {
		return Launch{}, errors.New("prepare codex turn: the prompt is empty, and codex exec needs one")
	}
	if turn.Resume && turn.RuntimeSessionID == "" {
		return Launch{}, errors.New("prepare codex turn: resuming needs the thread id the first turn reported")
	}
	program, err := resolveProgram(c.opts.Path, "RUNNER_CODEX_PATH")
	if err != nil {
		return Launch{}, fmt.Errorf("prepare codex turn: %w", err)
	}
	args := []string{program, "exec", "--json", "--skip-git-repo-check", "--cd", turn.Workdir}
	if c.opts.BypassSandbox {
		args = append(args, "--dangerously-bypass-approvals-and-sandbox")
	} else {
		args = append(args, "--full-auto")
	}
	if model := firstNonEmpty(turn.Model, c.opts.Model); model != "" {
		args = append(args, "--model", model)
	}
	args = append(args,
		"-c", tomlOverride("mcp_servers."+MCPServerName+".url", turn.MCP.URL),
		"-c", tomlOverride("mcp_servers."+MCPServerName+".bearer_token_env_var", EnvMCPToken),
	)
	if turn.Resume {
		args = append(args, "resume", turn.RuntimeSessionID)
	}
	args = append(args, "-")
	return Launch{
		Args:  args,
		Env:   append(baseEnv(turn), EnvMCPToken+"="+turn.MCP.Token),
		Dir:   turn.Workdir,
		Stdin: []byte(turn.Prompt),
	}, nil
}

// tomlOverride is a -c key=value whose value is a TOML string. A JSON string
// is a valid TOML basic string: both escape with \" \\ \n \t \uXXXX.
func tomlOverride(key, value string) string {
	b, _ := json.Marshal(value) // marshalling a string cannot fail
	return key + "=" + string(b)
}

// ParseLine implements Runtime. Codex's `exec --json` lines:
//
//	{"type":"thread.started","thread_id":"…"}
//	{"type":"turn.started"}
//	{"type":"item.started"|"item.updated"|"item.completed","item":{"id":"item_0","type":"agent_message"|"reasoning"|"command_execution"|"file_change"|"mcp_tool_call"|"web_search"|"todo_list"|"error",…}}
//	{"type":"turn.completed","usage":{…}}
//	{"type":"turn.failed","error":{"message":"…"}}
//	{"type":"error","message":"…"}
//
// testdata/codex_*.jsonl holds recorded lines of every shape.
func (c *Codex) ParseLine(line string) Event {
	var l codexLine
	if err := json.Unmarshal([]byte(line), &l); err != nil || l.Type == "" {
		return textEvent(line)
	}
	raw := line
	switch l.Type {
	case "thread.started":
		return Event{Kind: KindSystem, Type: l.Type, Text: "thread " + l.ThreadID + " started", Raw: raw, RuntimeSessionID: l.ThreadID}
	case "turn.started":
		return Event{Kind: KindSystem, Type: l.Type, Text: "turn started", Raw: raw}
	case "turn.completed":
		text := "turn completed"
		var usage *Usage
		if u := l.Usage; u != nil {
			text += fmt.Sprintf(" (%d input tokens, %d cached, %d output)", u.InputTokens, u.CachedInputTokens, u.OutputTokens)
			// Codex counts cached tokens inside input_tokens.
			usage = &Usage{InputTokens: max(0, u.InputTokens-u.CachedInputTokens), CacheReadTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens}
		}
		return Event{Kind: KindResult, Type: l.Type, Text: text, Raw: raw, Usage: usage}
	case "turn.failed":
		return Event{Kind: KindResult, Type: l.Type, Text: clip("turn failed: " + l.Error.text()), Raw: raw, IsError: true,
			Wall: codexWallText(l.Error.text())}
	case "error":
		return Event{Kind: KindError, Type: l.Type, Text: clip(l.Message), Raw: raw, IsError: true, Wall: codexWallText(l.Message)}
	case "item.started", "item.updated", "item.completed":
		if l.Item == nil {
			return textEvent(line)
		}
		ev := l.Item.event()
		ev.Type = l.Type + "/" + l.Item.Type
		ev.Text = clip(ev.Text)
		ev.Raw = raw
		if l.Type == "item.completed" && l.Item.Type == "command_execution" {
			// A finished command is its call and its result at once.
			input, _ := json.Marshal(map[string]string{"command": l.Item.Command})
			ev.ToolCalls = []ToolCall{{ID: l.Item.ID, Name: "shell", Input: input}}
			ev.ToolResults = []ToolResult{{ToolUseID: l.Item.ID, Text: l.Item.AggregatedOutput,
				IsError: ev.IsError || (l.Item.ExitCode != nil && *l.Item.ExitCode != 0)}}
		}
		return ev
	default:
		return textEvent(line)
	}
}

type codexLine struct {
	Type     string      `json:"type"`
	ThreadID string      `json:"thread_id"`
	Message  string      `json:"message"`
	Error    *codexError `json:"error"`
	Usage    *codexUsage `json:"usage"`
	Item     *codexItem  `json:"item"`
}

type codexError struct {
	Message string `json:"message"`
}

func (e *codexError) text() string {
	if e == nil {
		return ""
	}
	return e.Message
}

type codexUsage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
}

type codexItem struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	Message          string          `json:"message"`
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         *int            `json:"exit_code"`
	Status           string          `json:"status"`
	Changes          []codexChange   `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           *struct {
		Content json.RawMessage `json:"content"`
	} `json:"result"`
	Error *codexError `json:"error"`
	Query string      `json:"query"`
	Items []struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	} `json:"items"`
}

type codexChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

// event renders an item; the caller fills Type, Raw and clips Text.
func (it *codexItem) event() Event {
	failed := it.Status == "failed" || it.Status == "declined"
	switch it.Type {
	case "agent_message":
		return Event{Kind: KindAssistant, Text: it.Text}
	case "reasoning":
		return Event{Kind: KindAssistant, Text: "(thinking) " + it.Text}
	case "command_execution":
		text := "$ " + it.Command
		if it.ExitCode != nil {
			text += fmt.Sprintf("\n(exit %d)", *it.ExitCode)
		}
		if it.AggregatedOutput != "" {
			text += "\n" + it.AggregatedOutput
		}
		return Event{Kind: KindTool, Text: text, IsError: failed || (it.ExitCode != nil && *it.ExitCode != 0)}
	case "file_change":
		changes := make([]string, 0, len(it.Changes))
		for _, ch := range it.Changes {
			changes = append(changes, ch.Kind+" "+ch.Path)
		}
		return Event{Kind: KindTool, Text: "files: " + strings.Join(changes, ", ") + statusSuffix(it.Status), IsError: failed}
	case "mcp_tool_call":
		text := "→ " + it.Server + "." + it.Tool + " " + compactJSON(it.Arguments)
		switch {
		case it.Error != nil:
			text += "\n← error: " + it.Error.Message
		case it.Result != nil:
			text += "\n← " + blockContentText(it.Result.Content)
		}
		return Event{Kind: KindTool, Text: text, IsError: failed || it.Error != nil}
	case "web_search":
		return Event{Kind: KindTool, Text: "web search: " + it.Query}
	case "todo_list":
		items := make([]string, 0, len(it.Items))
		for _, todo := range it.Items {
			mark := "[ ]"
			if todo.Completed {
				mark = "[x]"
			}
			items = append(items, mark+" "+todo.Text)
		}
		return Event{Kind: KindAssistant, Text: "plan:\n" + strings.Join(items, "\n")}
	case "error":
		return Event{Kind: KindError, Text: it.Message, IsError: true}
	default:
		return Event{Kind: KindText, Text: "(" + it.Type + ")"}
	}
}

func statusSuffix(status string) string {
	if status == "" || status == "completed" {
		return ""
	}
	return " (" + status + ")"
}
