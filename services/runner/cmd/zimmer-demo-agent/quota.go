package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The demo agent's login, as Claude Code's lives in CLAUDE_CONFIG_DIR: a
// directory holding the account's state, here whether it rests after
// hitting its quota and which quota-wall lines were already spent. A login
// pool gives each account its own directory (the runner sets the variable
// from the account's config_dir), so one account resting leaves the others
// working, as real accounts do.
const configDirVar = "ZIMMER_DEMO_CONFIG_DIR"

// loginState is the account's state file.
type loginState struct {
	// RestsUntil is when the quota the last wall spent resets (Unix
	// seconds); 0 when the account has quota.
	RestsUntil int64 `json:"rests_until"`
	// Spent are the quota-wall lines that already hit the wall, by
	// conversation and line: a message parked by one and delivered again
	// after the reset goes on past it, so a scenario's wall is met once.
	Spent []string `json:"spent"`
}

type login struct {
	dir string
}

// newLogin is the login the environment names: configDirVar, else the
// user's config directory (the ambient login of `make run`).
func newLogin(getenv func(string) string) login {
	if dir := getenv(configDirVar); dir != "" {
		return login{dir: dir}
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		dir = os.TempDir()
	}
	return login{dir: filepath.Join(dir, "zimmer-demo")}
}

func (l login) path() string { return filepath.Join(l.dir, "login.json") }

func (l login) load() (loginState, error) {
	var st loginState
	b, err := os.ReadFile(l.path())
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read the login's state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("read the login's state %s: %w", l.path(), err)
	}
	return st, nil
}

func (l login) save(st loginState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode the login's state: %w", err)
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("create the login's directory: %w", err)
	}
	tmp := l.path() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write the login's state: %w", err)
	}
	if err := os.Rename(tmp, l.path()); err != nil {
		return fmt.Errorf("write the login's state: %w", err)
	}
	return nil
}

// wallKey names a quota-wall line of one conversation.
func wallKey(sessionID string, s step) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%s", sessionID, s.line, s.duration))
	return hex.EncodeToString(sum[:8])
}

// quotaWall is the quota-wall directive: unless this conversation already
// spent this line, the login rests for the step's duration and the turn
// hits the wall (exit 1); a spent line is passed over.
func (a *agent) quotaWall(s step) error {
	st, err := a.login.load()
	if err != nil {
		return err
	}
	key := wallKey(a.out.sessionID, s)
	if slices.Contains(st.Spent, key) {
		return nil
	}
	st.Spent = append(st.Spent, key)
	reset := time.Now().Add(s.duration)
	st.RestsUntil = reset.Unix()
	if err := a.login.save(st); err != nil {
		return err
	}
	return a.wall(reset)
}

// checkLogin hits the wall at once while the login rests, as the CLI
// does: nothing of the prompt runs.
func (a *agent) checkLogin() error {
	st, err := a.login.load()
	if err != nil {
		return err
	}
	if reset := time.Unix(st.RestsUntil, 0); st.RestsUntil > 0 && time.Now().Before(reset) {
		return a.wall(reset)
	}
	return nil
}

// wall prints what Claude Code prints when the account's usage limit is
// reached in -p --output-format stream-json mode (the rate_limit_event,
// the synthetic assistant message carrying "error": "rate_limit", an
// is_error result whose text is "Claude AI usage limit reached|<epoch>")
// and ends the run with status 1, as the CLI exits.
func (a *agent) wall(reset time.Time) error {
	text := fmt.Sprintf("Claude AI usage limit reached|%d", reset.Unix())
	lines := []any{
		rateLimitLine{Type: "rate_limit_event", Info: rateLimitInfo{Status: "rejected", ResetsAt: reset.Unix(), RateLimitType: "five_hour"},
			SessionID: a.out.sessionID},
		wallMessageLine{Type: "assistant", Message: message{ID: a.out.nextID("msg"), Type: "message", Role: "assistant",
			Model: "<synthetic>", Content: []any{textBlock{Type: "text", Text: text}}, Usage: &usage{}},
			SessionID: a.out.sessionID, Error: "rate_limit"},
		resultLine{Type: "result", Subtype: "success", IsError: true, DurationMS: time.Since(a.start).Milliseconds(),
			NumTurns: 1, Result: text, SessionID: a.out.sessionID},
	}
	for _, l := range lines {
		if err := a.out.write(l); err != nil {
			return err
		}
	}
	a.walled = true
	return exitCode(1)
}

type rateLimitLine struct {
	Type      string        `json:"type"` // rate_limit_event
	Info      rateLimitInfo `json:"rate_limit_info"`
	SessionID string        `json:"session_id"`
}

type rateLimitInfo struct {
	Status        string `json:"status"`
	ResetsAt      int64  `json:"resetsAt"`
	RateLimitType string `json:"rateLimitType"`
}

// wallMessageLine is the synthetic assistant message of a wall.
type wallMessageLine struct {
	Type      string  `json:"type"`
	Message   message `json:"message"`
	SessionID string  `json:"session_id"`
	Error     string  `json:"error"`
}
