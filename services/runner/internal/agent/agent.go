package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// Runtime names, as sessions carry them in agent_runtime: lifecycle's
// published names, which it refuses any other at create.
const (
	RuntimeClaudeCode = rules.RuntimeClaudeCode
	RuntimeCodex      = rules.RuntimeCodex
	RuntimeCommand    = rules.RuntimeCommand
	RuntimeDemo       = rules.RuntimeDemo
)

// Environment variables every agent process gets (besides what its runtime
// adds). The session's credential travels in EnvMCPToken only for runtimes
// that read it from the environment; it is never put on a command line.
const (
	EnvSessionID = "ZIMMER_SESSION_ID"
	EnvMCPURL    = "ZIMMER_MCP_URL"
	EnvMCPToken  = "ZIMMER_MCP_TOKEN"
	EnvWorkdir   = "ZIMMER_WORKDIR"
)

// MCPServerName is the name Zimmer's MCP server has in every runtime's MCP
// configuration, so its tools read as mcp__zimmer__<tool> in a transcript.
const MCPServerName = "zimmer"

// Runtime turns a turn into an agent process and that process's output lines
// into transcript events. Implementations hold configuration only: Prepare
// and ParseLine are safe for concurrent use.
type Runtime interface {
	// Name is the runtime's agent_runtime value.
	Name() string
	// Prepare builds the launch of one turn. It touches nothing: the caller
	// writes Launch.Files, starts the process and removes the files.
	Prepare(turn Turn) (Launch, error)
	// ParseLine turns one line of the agent's stdout (without its newline)
	// into a transcript event. It never fails: a line it does not understand
	// is kept as text.
	ParseLine(line string) Event
}

// Turn is what one agent turn needs.
type Turn struct {
	// SessionID is the Zimmer session's id.
	SessionID int64
	// RuntimeSessionID is the runtime's own conversation id: the UUID given
	// to claude's --session-id and --resume, codex's thread id. Codex picks
	// its own on the first turn and reports it (Event.RuntimeSessionID);
	// store what a turn reports and pass it back on the next.
	RuntimeSessionID string
	// Resume is false on a session's first turn and true on every later one
	// (follow-ups, restarts, system recoveries after the first turn began).
	Resume bool
	// Prompt is the text the agent is given for this turn.
	Prompt string
	// Workdir is where the agent works: the clone's subdirectory.
	Workdir string
	// StateDir is a runner-owned directory for this session's files (MCP
	// configuration, prompt file). It must lie outside Workdir: the clone
	// never receives a credential.
	StateDir string
	// Model overrides the runtime's configured model for this turn, if set.
	Model string
	// MCP is Zimmer's MCP endpoint and the session's own credential.
	MCP MCPEndpoint
}

// MCPEndpoint is where the agent reaches Zimmer's MCP server and the
// credential it acts with: the session's own, never an operator key.
type MCPEndpoint struct {
	// URL is the gateway's /mcp endpoint, e.g. http://127.0.0.1:8080/mcp.
	URL string
	// Token is the session credential (zsc_…), sent as Authorization: Bearer.
	Token string
}

// Launch is everything needed to start one turn's agent process.
type Launch struct {
	// Args is the command line; Args[0] is the program's resolved path.
	Args []string
	// Env holds KEY=VALUE pairs added to the agent's environment; see
	// Environ for the whole environment.
	Env []string
	// Dir is the working directory.
	Dir string
	// Stdin is written to the process's stdin, which is then closed; nil
	// means an empty stdin (never the runner's own).
	Stdin []byte
	// TakesAnswers: the agent reads elicitation answers on its stdin,
	// which stays open for them (Stdin is then nil); see AnswerLine.
	TakesAnswers bool
	// Files must be written (WriteFiles) before the process starts.
	Files []File
}

// File is a file a launch needs, written with mode 0600 under the session's
// state directory because it may hold the session's credential.
type File struct {
	Path     string
	Contents []byte
}

// fileMode is the mode of every file a launch writes: the credential inside
// must be readable by the runner's user only.
const fileMode fs.FileMode = 0o600

// WriteFiles writes the launch's files, each with mode 0600 whatever existed
// before, creating their directories with mode 0700. A file is written
// beside its final path and renamed over it, so a process never reads half a
// configuration.
func (l Launch) WriteFiles() error {
	for _, f := range l.Files {
		if err := writePrivateFile(f.Path, f.Contents); err != nil {
			return err
		}
	}
	return nil
}

// RemoveFiles removes the launch's files, so a credential does not outlive
// the turn on disk. A file already gone is not an error.
func (l Launch) RemoveFiles() error {
	var errs []error
	for _, f := range l.Files {
		if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", f.Path, err))
		}
	}
	return errors.Join(errs...)
}

func writePrivateFile(path string, contents []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; only a failed write leaves it
	if err := tmp.Chmod(fileMode); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if _, err := tmp.Write(contents); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// scrubbedPrefixes name the runner's environment that an agent must not
// inherit: Zimmer's operator and admin keys, the internal token and every
// service's configuration (database URLs included). The agent gets the
// session's own credential instead.
var scrubbedPrefixes = []string{
	"ZIMMER_", "RUNNER_", "LIFECYCLE_", "LINEAGE_", "QUEUE_", "NOTIFICATION_", "GATEWAY_",
}

// Environ is the agent's whole environment: base (normally os.Environ())
// without Zimmer's own variables, then the launch's Env.
func (l Launch) Environ(base []string) []string {
	env := make([]string, 0, len(base)+len(l.Env))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !Scrubbed(name) {
			env = append(env, kv)
		}
	}
	return append(env, l.Env...)
}

// Scrubbed reports whether a variable is the runner's own, which no agent
// inherits and no login may set.
func Scrubbed(name string) bool {
	for _, p := range scrubbedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Kind classifies a transcript event.
type Kind string

// Transcript event kinds.
const (
	// KindSystem is the runtime talking about itself: start, init, status.
	KindSystem Kind = "system"
	// KindUser is a user message echoed by the runtime.
	KindUser Kind = "user"
	// KindAssistant is the agent's own text (or reasoning).
	KindAssistant Kind = "assistant"
	// KindTool is a tool call or a tool's result.
	KindTool Kind = "tool"
	// KindResult is the turn's final line; Event.IsError says how it ended.
	KindResult Kind = "result"
	// KindElicitation is an MCP elicitation the agent is blocked on.
	KindElicitation Kind = "elicitation"
	// KindError is an error the runtime reported.
	KindError Kind = "error"
	// KindText is a line that is not a known event: plain output, or JSON
	// of a type this package does not know.
	KindText Kind = "text"
)

// Event is one transcript line.
type Event struct {
	Kind Kind
	// Type is the runtime's own name for the line ("assistant",
	// "system/init", "item.completed/command_execution"); empty for text.
	Type string
	// Text is a readable rendering, cut to maxTextRunes; Raw keeps all.
	Text string
	// Raw is the line exactly as the agent printed it.
	Raw string
	// IsError marks a result that ended the turn in error, a failed tool
	// result and every KindError event.
	IsError bool
	// RuntimeSessionID is the runtime's conversation id when the line names
	// it (claude's init and result lines, codex's thread.started).
	RuntimeSessionID string
	// Elicitation is set on KindElicitation events.
	Elicitation *Elicitation
	// ElicitationResult is set on the line saying what became of an
	// elicitation (the demo agent's system/elicitation_result).
	ElicitationResult *ElicitationResult
	// ToolCalls are the tool calls an assistant line makes, and
	// ToolResults the results a user line carries back: what the runner
	// reads to learn which pull requests the agent's own tools opened.
	ToolCalls   []ToolCall
	ToolResults []ToolResult
	// Wall is set on a line saying the login hit a quota or authentication
	// wall (wall.go): the turn did nothing, and is not an error of the
	// session's.
	Wall *Wall
	// Usage is what the runtime reported the turn used, on the line that
	// says it: Claude Code's result line (and the demo agent's), Codex's
	// turn.completed.
	Usage *Usage
}

// Usage is a runtime's report of what a turn used. CostUSD is the
// runtime's own figure (Claude Code's total_cost_usd); Codex reports none.
type Usage struct {
	InputTokens         int64
	OutputTokens        int64
	CacheReadTokens     int64
	CacheCreationTokens int64
	CostUSD             float64
}

// ToolCall is one tool call of the agent's.
type ToolCall struct {
	ID   string
	Name string
	// Input is the call's arguments as JSON.
	Input []byte
}

// ToolResult is what one tool call returned.
type ToolResult struct {
	ToolUseID string
	// Text is the result's text (its text blocks, joined).
	Text    string
	IsError bool
}

// Elicitation is what an agent blocked on an MCP elicitation reported.
type Elicitation struct {
	// ID identifies the elicitation, if the agent said.
	ID string
	// Message is what is asked.
	Message string
	// Timeout is how long the agent waits for the answer, if it said.
	Timeout time.Duration
	// RequestedSchema is the JSON Schema the answer's content must match,
	// if the agent sent one.
	RequestedSchema map[string]any
}

// ElicitationResult is what an agent did about an elicitation: the action
// it took on an answer (accept, decline, cancel), or ElicitationTimedOut
// when it stopped waiting.
type ElicitationResult struct {
	ID     string
	Action string
}

// ElicitationTimedOut is the action of an elicitation the agent stopped
// waiting for.
const ElicitationTimedOut = "timeout"

// maxTextRunes bounds Event.Text: a tool result can be a whole file, and the
// text is a rendering for people; the raw line keeps everything.
const maxTextRunes = 4000

func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxTextRunes {
		return s
	}
	r := []rune(s)
	return string(r[:maxTextRunes]) + "…"
}

// textEvent keeps a line nobody understood as text.
func textEvent(line string) Event {
	return Event{Kind: KindText, Text: clip(line), Raw: line}
}

// resolveProgram finds program on PATH (or checks the path it names), so a
// missing CLI fails the turn with a reason naming the variable to set.
func resolveProgram(program, variable string) (string, error) {
	if program == "" {
		return "", fmt.Errorf("no program configured: set %s", variable)
	}
	path, err := exec.LookPath(program)
	if err != nil {
		return "", fmt.Errorf("find %q (set %s to its path or put it on PATH): %w", program, variable, err)
	}
	return path, nil
}

// checkTurn validates what every runtime needs from a turn.
func checkTurn(turn Turn) error {
	if turn.Workdir == "" {
		return errors.New("turn has no workdir")
	}
	if turn.StateDir == "" {
		return errors.New("turn has no state directory")
	}
	if turn.MCP.URL == "" {
		return errors.New("turn has no MCP endpoint URL")
	}
	if turn.MCP.Token == "" {
		return errors.New("turn has no session credential for the MCP endpoint")
	}
	inside, err := within(turn.StateDir, turn.Workdir)
	if err != nil {
		return err
	}
	if inside {
		return fmt.Errorf("state directory %s lies inside the workdir %s: the clone must never receive the session credential", turn.StateDir, turn.Workdir)
	}
	return nil
}

// within reports whether path is dir or lies below it.
func within(path, dir string) (bool, error) {
	absPath, err := filepath.Abs(path)
	if err != nil {
		return false, fmt.Errorf("resolve %s: %w", path, err)
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return false, fmt.Errorf("resolve %s: %w", dir, err)
	}
	rel, err := filepath.Rel(absDir, absPath)
	if err != nil {
		return false, fmt.Errorf("compare %s with %s: %w", path, dir, err)
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))), nil
}

// baseEnv is the environment every runtime adds.
func baseEnv(turn Turn) []string {
	return []string{
		EnvSessionID + "=" + strconv.FormatInt(turn.SessionID, 10),
		EnvMCPURL + "=" + turn.MCP.URL,
		EnvWorkdir + "=" + turn.Workdir,
	}
}

// AnswerLine is an elicitation's answer as a runtime that TakesAnswers
// reads it on stdin: one line of JSON, MCP's elicitation response with the
// id of the elicitation it answers, so an agent can tell a late answer to
// an earlier question from the answer to its current one.
func AnswerLine(id, action string, content map[string]any) ([]byte, error) {
	b, err := json.Marshal(struct {
		ID      string         `json:"id"`
		Action  string         `json:"action"`
		Content map[string]any `json:"content,omitempty"`
	}{id, action, content})
	if err != nil {
		return nil, fmt.Errorf("encode the answer to elicitation %q: %w", id, err)
	}
	return append(b, '\n'), nil
}
