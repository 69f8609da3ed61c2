package agent

import (
	"fmt"
	"path/filepath"
)

// DemoOptions configure the demo runtime.
type DemoOptions struct {
	// Path is the demo agent binary (cmd/zimmer-demo-agent): a name looked
	// up on PATH or a path.
	Path string
}

// Demo runs the project's demo agent, which obeys @demo directives in its
// prompt and prints Claude-like stream-json lines plus
// {"type":"elicitation",…} when it blocks on one:
//
//	zimmer-demo-agent --prompt-file <file> --session-id <uuid> [--resume]
//
// The prompt is written 0600 under the session's state directory; the
// agent reaches Zimmer's MCP with ZIMMER_MCP_URL and its own credential in
// ZIMMER_MCP_TOKEN (never on the command line).
type Demo struct {
	opts DemoOptions
}

// NewDemo returns the demo runtime.
func NewDemo(opts DemoOptions) *Demo { return &Demo{opts: opts} }

// Name implements Runtime.
func (d *Demo) Name() string { return RuntimeDemo }

const demoPromptFile = "demo-prompt.txt"

// Prepare implements Runtime.
func (d *Demo) Prepare(turn Turn) (Launch, error) {
	if err := checkTurn(turn); err != nil {
		return Launch{}, fmt.Errorf("prepare demo turn: %w", err)
	}
	program, err := resolveProgram(d.opts.Path, "RUNNER_DEMO_AGENT_PATH")
	if err != nil {
		return Launch{}, fmt.Errorf("prepare demo turn: %w", err)
	}
	promptPath := filepath.Join(turn.StateDir, demoPromptFile)
	args := []string{program, "--prompt-file", promptPath}
	if turn.RuntimeSessionID != "" {
		args = append(args, "--session-id", turn.RuntimeSessionID)
	}
	if turn.Resume {
		args = append(args, "--resume")
	}
	return Launch{
		Args:  args,
		Env:   append(baseEnv(turn), EnvMCPToken+"="+turn.MCP.Token),
		Dir:   turn.Workdir,
		Files: []File{{Path: promptPath, Contents: []byte(turn.Prompt)}},
		// The prompt is a file, so stdin is free for elicitation answers.
		TakesAnswers: true,
	}, nil
}

// ParseLine implements Runtime: the demo agent speaks stream-json.
func (d *Demo) ParseLine(line string) Event { return parseStreamJSON(line) }
