package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
)

// DefaultPromptArgMax is the largest prompt, in bytes, passed as a command
// line argument. Linux refuses a single argument over 128 KiB (and all of
// them together over a quarter of the stack limit, environment included);
// far below that, a prompt goes on stdin instead, where no limit applies.
const DefaultPromptArgMax = 16 << 10

// ClaudeCodeOptions configure the claude_code runtime.
type ClaudeCodeOptions struct {
	// Path is the claude CLI: a name looked up on PATH or a path.
	Path string
	// Model is passed as --model unless empty (the CLI's default) or
	// overridden by the turn.
	Model string
	// SkipPermissions passes --dangerously-skip-permissions: a headless turn
	// has nobody to answer a permission prompt, so without it every tool
	// that asks is denied.
	SkipPermissions bool
	// PromptArgMax is the largest prompt given as an argument; 0 means
	// DefaultPromptArgMax.
	PromptArgMax int
}

// ClaudeCode runs Claude Code's CLI in its non-interactive mode:
//
//	claude -p --output-format stream-json --verbose --session-id <uuid> --mcp-config <file> [--dangerously-skip-permissions] [--model M] -- <prompt>
//
// and --resume <uuid> instead of --session-id on later turns. A prompt over
// PromptArgMax (or one that cannot be an argument) goes on stdin as a
// stream-json user message with --input-format stream-json. The MCP
// configuration file names Zimmer's /mcp with the session's credential as a
// bearer header; the credential appears in no argument.
type ClaudeCode struct {
	opts ClaudeCodeOptions
}

// NewClaudeCode returns the claude_code runtime.
func NewClaudeCode(opts ClaudeCodeOptions) *ClaudeCode {
	if opts.PromptArgMax <= 0 {
		opts.PromptArgMax = DefaultPromptArgMax
	}
	return &ClaudeCode{opts: opts}
}

// Name implements Runtime.
func (c *ClaudeCode) Name() string { return RuntimeClaudeCode }

// claudeMCPConfigFile is the MCP configuration's name in the state dir.
const claudeMCPConfigFile = "claude-mcp.json"

// Prepare implements Runtime.
func (c *ClaudeCode) Prepare(turn Turn) (Launch, error) {
	if err := checkTurn(turn); err != nil {
		return Launch{}, fmt.Errorf("prepare claude_code turn: %w", err)
	}
	if strings.TrimSpace(turn.Prompt) == "" {
		return Launch{}, errors.New("prepare claude_code turn: the prompt is empty, and claude -p needs one")
	}
	// Claude refuses a --session-id that is not a UUID; say so before it does.
	if err := uuid.Validate(turn.RuntimeSessionID); err != nil {
		return Launch{}, fmt.Errorf("prepare claude_code turn: runtime session id %q is not a UUID: %w", turn.RuntimeSessionID, err)
	}
	program, err := resolveProgram(c.opts.Path, "RUNNER_CLAUDE_PATH")
	if err != nil {
		return Launch{}, fmt.Errorf("prepare claude_code turn: %w", err)
	}
	config, err := mcpConfigJSON(turn.MCP)
	if err != nil {
		return Launch{}, fmt.Errorf("prepare claude_code turn: %w", err)
	}
	configPath := filepath.Join(turn.StateDir, claudeMCPConfigFile)

	args := []string{program, "-p", "--output-format", "stream-json", "--verbose"}
	if turn.Resume {
		args = append(args, "--resume", turn.RuntimeSessionID)
	} else {
		args = append(args, "--session-id", turn.RuntimeSessionID)
	}
	if c.opts.SkipPermissions {
		args = append(args, "--dangerously-skip-permissions")
	}
	if model := firstNonEmpty(turn.Model, c.opts.Model); model != "" {
		args = append(args, "--model", model)
	}
	// --mcp-config takes several files: the prompt goes after "--" so it is
	// never read as one (nor as a flag, when it starts with "-").
	args = append(args, "--mcp-config", configPath)

	launch := Launch{
		Dir:   turn.Workdir,
		Env:   baseEnv(turn),
		Files: []File{{Path: configPath, Contents: config}},
	}
	if promptFitsArgument(turn.Prompt, c.opts.PromptArgMax) {
		launch.Args = append(args, "--", turn.Prompt)
		return launch, nil
	}
	stdin, err := streamJSONUserMessage(turn.Prompt)
	if err != nil {
		return Launch{}, fmt.Errorf("prepare claude_code turn: %w", err)
	}
	launch.Args = append(args, "--input-format", "stream-json")
	launch.Stdin = stdin
	return launch, nil
}

// ParseLine implements Runtime.
func (c *ClaudeCode) ParseLine(line string) Event { return parseStreamJSON(line) }

// promptFitsArgument reports whether prompt can be a command line argument
// of at most limit bytes: an argument is a C string, so a NUL cannot be in it.
func promptFitsArgument(prompt string, limit int) bool {
	return len(prompt) <= limit && !strings.ContainsRune(prompt, 0)
}

// streamJSONUserMessage is prompt as the one user message of a stream-json
// input (--input-format stream-json), newline-terminated.
func streamJSONUserMessage(prompt string) ([]byte, error) {
	type textBlock struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type message struct {
		Role    string      `json:"role"`
		Content []textBlock `json:"content"`
	}
	msg := struct {
		Type    string  `json:"type"`
		Message message `json:"message"`
	}{
		Type:    "user",
		Message: message{Role: "user", Content: []textBlock{{Type: "text", Text: prompt}}},
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encode the prompt as a stream-json message: %w", err)
	}
	return append(b, '\n'), nil
}

// mcpConfigJSON is the MCP configuration Claude Code reads (--mcp-config),
// and the demo agent and command runtimes are given: Zimmer's endpoint over
// streamable HTTP with the session's credential as a bearer token.
func mcpConfigJSON(ep MCPEndpoint) ([]byte, error) {
	if ep.URL == "" || ep.Token == "" {
		return nil, errors.New("the MCP configuration needs the endpoint URL and the session credential")
	}
	type server struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	config := struct {
		MCPServers map[string]server `json:"mcpServers"`
	}{
		MCPServers: map[string]server{
			MCPServerName: {Type: "http", URL: ep.URL, Headers: map[string]string{"Authorization": "Bearer " + ep.Token}},
		},
	}
	b, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the MCP configuration: %w", err)
	}
	return append(b, '\n'), nil
}
