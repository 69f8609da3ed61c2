package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// directivePrefix starts a directive line.
const directivePrefix = "@demo"

// step is one thing the agent does: say text, or obey one directive.
type step struct {
	line int    // 1-based prompt line, for error messages
	kind string // "text" or the directive's name
	text string // text to say; the elicitation's message

	duration time.Duration        // sleep, spawn-grandchild, elicit, quota-wall
	code     int                  // exit
	signal   syscall.Signal       // signal
	tool     string               // mcp
	args     map[string]any       // mcp
	pr       rules.PullRequestRef // pr-create
}

// parseScript turns a prompt into steps: each directive line one step, each
// run of other lines one "text" step (surrounding blank lines dropped). A
// malformed directive fails the whole prompt before anything runs, so a
// typo in a test scenario is an error rather than a different scenario.
func parseScript(prompt string) ([]step, error) {
	var steps []step
	var text []string
	textStart := 0
	flush := func() {
		joined := strings.Trim(strings.Join(text, "\n"), "\n \t")
		if joined != "" {
			steps = append(steps, step{line: textStart, kind: "text", text: joined})
		}
		text = nil
	}
	for i, raw := range strings.Split(strings.ReplaceAll(prompt, "\r\n", "\n"), "\n") {
		line := strings.TrimSpace(raw)
		name, rest, isDirective := cutDirective(line)
		if !isDirective {
			if len(text) == 0 {
				if line == "" {
					continue // leading blank lines
				}
				textStart = i + 1
			}
			text = append(text, raw)
			continue
		}
		flush()
		s, err := parseDirective(name, rest)
		if err != nil {
			return nil, fmt.Errorf("prompt line %d %q: %w", i+1, line, err)
		}
		s.line = i + 1
		steps = append(steps, s)
	}
	flush()
	return steps, nil
}

// cutDirective splits "@demo name rest" into name and rest.
func cutDirective(line string) (name, rest string, ok bool) {
	after, found := strings.CutPrefix(line, directivePrefix)
	if !found || (after != "" && after[0] != ' ' && after[0] != '\t') {
		return "", "", false
	}
	name, rest, _ = strings.Cut(strings.TrimSpace(after), " ")
	return name, strings.TrimSpace(rest), true
}

func parseDirective(name, rest string) (step, error) {
	s := step{kind: name}
	var err error
	switch name {
	case "say":
		if rest == "" {
			return s, fmt.Errorf("say needs text")
		}
		s.text = rest
	case "sleep":
		s.duration, err = parseDuration(rest)
	case "exit":
		s.code, err = strconv.Atoi(rest)
		if err == nil && (s.code < 0 || s.code > 255) {
			err = fmt.Errorf("exit code %d is not 0–255", s.code)
		}
	case "signal":
		s.signal, err = parseSignal(rest)
	case "ignore-sigterm":
		if rest != "" {
			err = fmt.Errorf("ignore-sigterm takes no argument")
		}
	case "spawn-grandchild":
		s.duration, err = parseDuration(rest)
	case "mcp":
		tool, argsJSON, _ := strings.Cut(rest, " ")
		if tool == "" {
			return s, fmt.Errorf("mcp needs a tool name")
		}
		s.tool = tool
		s.args = map[string]any{}
		if argsJSON = strings.TrimSpace(argsJSON); argsJSON != "" {
			if err := json.Unmarshal([]byte(argsJSON), &s.args); err != nil {
				return s, fmt.Errorf("mcp arguments must be a JSON object: %w", err)
			}
		}
	case "pr-create":
		var ref rules.PullRequestRef
		if ref, err = rules.ParsePullRequestURL(rest); err == nil {
			s.pr = ref
		}
	case "quota-wall":
		s.duration, err = parseDuration(rest)
		if err == nil && s.duration <= 0 {
			err = fmt.Errorf("the quota must reset after a positive duration")
		}
	case "elicit":
		d, message, _ := strings.Cut(rest, " ")
		s.duration, err = parseDuration(d)
		s.text = strings.TrimSpace(message)
		if s.text == "" {
			s.text = "The demo agent needs an answer to continue."
		}
	default:
		return s, fmt.Errorf("unknown directive %q (known: say, sleep, exit, signal, ignore-sigterm, spawn-grandchild, mcp, pr-create, elicit, quota-wall)", name)
	}
	if err != nil {
		return s, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want a duration like 2s or 500ms: %w", err)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %s", s)
	}
	return d, nil
}

// parseSignal accepts SIGKILL, KILL or 9.
func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}
