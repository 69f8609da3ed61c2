package infer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// maxOutputBytes bounds what a one-shot CLI's stdout and stderr are read
// to: an answer is one short JSON object.
const maxOutputBytes = 1 << 20

// ClaudeCode asks Claude Code's CLI in one-shot print mode, with the prompt
// on stdin, no tools worth a turn (one agentic turn at most) and no MCP
// server, in an empty directory:
//
//	claude -p --output-format json --max-turns 1 [--model M]
//
// and reads the "result" of the one JSON object it prints.
type ClaudeCode struct {
	// Path is the claude CLI (RUNNER_CLAUDE_PATH); Model its --model
	// (RUNNER_CLAUDE_MODEL), empty for the CLI's default.
	Path, Model string
	// environ is the environment scrubbed for the CLI; nil: the runner's.
	environ []string
}

// Name implements Inferrer.
func (c ClaudeCode) Name() string { return agent.RuntimeClaudeCode }

// Infer implements Inferrer.
func (c ClaudeCode) Infer(ctx context.Context, req Request) (Answer, error) {
	args := []string{"-p", "--output-format", "json", "--max-turns", "1"}
	if c.Model != "" {
		args = append(args, "--model", c.Model)
	}
	out, err := oneShot(ctx, c.Path, "RUNNER_CLAUDE_PATH", c.environ, args, Prompt(req), func(string) {})
	if err != nil {
		return Answer{}, err
	}
	var res struct {
		Result       string   `json:"result"`
		IsError      bool     `json:"is_error"`
		Subtype      string   `json:"subtype"`
		TotalCostUSD *float64 `json:"total_cost_usd"`
		Usage        *struct {
			InputTokens              int64 `json:"input_tokens"`
			OutputTokens             int64 `json:"output_tokens"`
			CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
			CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out.stdout), &res); err != nil {
		return Answer{}, fmt.Errorf("claude printed no JSON result (%w): %s", err, strconv.QuoteToASCII(cut(string(out.stdout), 200)))
	}
	if res.IsError {
		return Answer{}, fmt.Errorf("claude ended in error (%s): %s", res.Subtype, strconv.QuoteToASCII(cut(res.Result, 200)))
	}
	a, err := ParseAnswer(res.Result)
	if err == nil && (res.Usage != nil || res.TotalCostUSD != nil) {
		a.Usage = &domain.Usage{}
		if u := res.Usage; u != nil {
			a.Usage.InputTokens, a.Usage.OutputTokens = u.InputTokens, u.OutputTokens
			a.Usage.CacheReadTokens, a.Usage.CacheCreationTokens = u.CacheReadInputTokens, u.CacheCreationInputTokens
		}
		if res.TotalCostUSD != nil {
			a.Usage.CostUSD = *res.TotalCostUSD
		}
	}
	return a, err
}

// Codex asks Codex's CLI non-interactively, read-only, with the prompt on
// stdin, in an empty directory:
//
//	codex exec --skip-git-repo-check --sandbox read-only --output-last-message <file> [--model M] -
//
// and reads its last message from the file.
type Codex struct {
	// Path is the codex CLI (RUNNER_CODEX_PATH); Model its --model
	// (RUNNER_CODEX_MODEL).
	Path, Model string
	// environ is the environment scrubbed for the CLI; nil: the runner's.
	environ []string
}

// Name implements Inferrer.
func (c Codex) Name() string { return agent.RuntimeCodex }

// Infer implements Inferrer.
func (c Codex) Infer(ctx context.Context, req Request) (Answer, error) {
	var answerFile string
	args := func(dir string) []string {
		answerFile = filepath.Join(dir, "answer.txt")
		a := []string{"exec", "--skip-git-repo-check", "--sandbox", "read-only", "--output-last-message", answerFile}
		if c.Model != "" {
			a = append(a, "--model", c.Model)
		}
		return append(a, "-")
	}
	var answer []byte
	_, err := oneShotIn(ctx, c.Path, "RUNNER_CODEX_PATH", c.environ, args, Prompt(req), func(string) {
		answer, _ = os.ReadFile(answerFile) // read before the directory goes
	})
	if err != nil {
		return Answer{}, err
	}
	if len(bytes.TrimSpace(answer)) == 0 {
		return Answer{}, errors.New("codex wrote no last message")
	}
	return ParseAnswer(string(answer))
}

type output struct{ stdout, stderr []byte }

func oneShot(ctx context.Context, program, variable string, environ, args []string, prompt string, after func(dir string)) (output, error) {
	return oneShotIn(ctx, program, variable, environ, func(string) []string { return args }, prompt, after)
}

// oneShotIn runs program once in a fresh empty directory (its clone is
// none of its business) with the prompt on stdin and the agent's scrubbed
// environment (no Zimmer key or database URL), killing its whole process
// group when ctx ends; after runs before the directory is removed.
func oneShotIn(ctx context.Context, program, variable string, environ []string, args func(dir string) []string, prompt string,
	after func(dir string),
) (output, error) {
	if program == "" {
		return output{}, fmt.Errorf("no program configured: set %s", variable)
	}
	path, err := exec.LookPath(program)
	if err != nil {
		return output{}, fmt.Errorf("find %q (set %s to its path or put it on PATH): %w", program, variable, err)
	}
	dir, err := os.MkdirTemp("", "zimmer-infer-")
	if err != nil {
		return output{}, fmt.Errorf("make a working directory: %w", err)
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, path, args(dir)...)
	cmd.Dir = dir
	if environ == nil {
		environ = os.Environ()
	}
	cmd.Env = agent.Launch{}.Environ(environ)
	cmd.Stdin = strings.NewReader(prompt)
	var stdout, stderr limited
	stdout.n, stderr.n = maxOutputBytes, maxOutputBytes
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	after(dir)
	out := output{stdout: stdout.b.Bytes(), stderr: stderr.b.Bytes()}
	if ctx.Err() != nil {
		return out, fmt.Errorf("%s gave no answer in time: %w", filepath.Base(path), ctx.Err())
	}
	if err != nil {
		return out, fmt.Errorf("%s failed (%w): %s", filepath.Base(path), err, strconv.QuoteToASCII(cut(strings.TrimSpace(string(out.stderr)), 300)))
	}
	return out, nil
}

// limited keeps the first n bytes written and drops the rest, so a
// chatty CLI cannot fill the runner's memory.
type limited struct {
	b bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

var _ io.Writer = (*limited)(nil)
