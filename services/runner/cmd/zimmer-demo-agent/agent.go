package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// agent runs one turn's steps.
type agent struct {
	out    *transcript
	stderr io.Writer
	mcp    *mcpCaller
	// stdin carries elicitation answers; nil when the prompt was read from it.
	stdin   io.Reader
	answers <-chan string // started at the first elicit

	// login is the account the agent runs under (quota.go); walled: the
	// turn hit its wall, whose result line is already printed.
	login  login
	walled bool

	ignoreSIGTERM bool
	lastText      string
	said          bool
	turns         int
	start         time.Time
}

const (
	// grandchildReadyTimeout bounds the wait for a grandchild to report
	// that it is set up (its SIGTERM disposition in place).
	grandchildReadyTimeout = 5 * time.Second
	mcpCallTimeout         = 30 * time.Second
)

// run obeys the steps in order and returns the exit code; a signal step
// does not return.
func (a *agent) run(ctx context.Context, steps []step) int {
	if err := a.checkLogin(); err != nil {
		if a.walled {
			return a.finish(1)
		}
		_, _ = fmt.Fprintf(a.stderr, "zimmer-demo-agent: %v\n", err)
		return a.finish(1)
	}
	for _, s := range steps {
		if err := a.do(ctx, s); err != nil {
			var exit exitCode
			if errors.As(err, &exit) {
				return a.finish(int(exit))
			}
			_, _ = fmt.Fprintf(a.stderr, "zimmer-demo-agent: prompt line %d (%s): %v\n", s.line, s.kind, err)
			return a.finish(1)
		}
	}
	if !a.said {
		if err := a.say("Hello from the Zimmer demo agent. Nothing to do."); err != nil {
			_, _ = fmt.Fprintf(a.stderr, "zimmer-demo-agent: %v\n", err)
			return 1
		}
	}
	return a.finish(0)
}

// exitCode is the error an exit step returns to end the run.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

func (a *agent) do(ctx context.Context, s step) error {
	switch s.kind {
	case "text", "say":
		return a.say(s.text)
	case "sleep":
		time.Sleep(s.duration)
		return nil
	case "exit":
		return exitCode(s.code)
	case "signal":
		dieBy(s.signal)
		return fmt.Errorf("still alive after raising %v", s.signal)
	case "ignore-sigterm":
		signal.Ignore(syscall.SIGTERM)
		a.ignoreSIGTERM = true
		return nil
	case "spawn-grandchild":
		return a.spawnGrandchild(s.duration)
	case "mcp":
		return a.callMCP(ctx, s.tool, s.args)
	case "pr-create":
		return a.createPullRequest(s.pr)
	case "elicit":
		return a.elicit(s)
	case "quota-wall":
		return a.quotaWall(s)
	default:
		return fmt.Errorf("unknown step %q", s.kind)
	}
}

func (a *agent) say(text string) error {
	a.said, a.lastText = true, text
	a.turns++
	return a.out.assistant(textBlock{Type: "text", Text: text})
}

// finish prints the result line; a non-zero code is an error result and a
// line on stderr, as a failing CLI leaves for the failure reason.
func (a *agent) finish(code int) int {
	if a.walled {
		return code // the wall printed its own result, as the CLI does
	}
	res := resultLine{Type: "result", Subtype: "success", DurationMS: time.Since(a.start).Milliseconds(),
		NumTurns: max(a.turns, 1), Result: a.lastText, SessionID: a.out.sessionID, Usage: turnUsage, TotalCostUSD: turnCostUSD}
	if code != 0 {
		res.Subtype, res.IsError = "error_during_execution", true
		res.Result = fmt.Sprintf("exited with status %d as the prompt directed", code)
		_, _ = fmt.Fprintf(a.stderr, "zimmer-demo-agent: exiting with status %d as the prompt directed\n", code)
	}
	if err := a.out.write(res); err != nil {
		_, _ = fmt.Fprintf(a.stderr, "zimmer-demo-agent: %v\n", err)
		return max(code, 1)
	}
	return code
}

// spawnGrandchild starts a copy of this binary that sleeps for d in the
// agent's process group, with its own stdio on /dev/null so that only the
// process group, not a pipe, ties it to the turn. It inherits
// ignore-sigterm. The agent waits until the grandchild has set itself up
// (it closes an inherited pipe), so a terminate that follows the pid line
// finds it in its final state.
func (a *agent) spawnGrandchild(d time.Duration) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	ready, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("ready pipe: %w", err)
	}
	defer func() { _ = ready.Close() }()
	args := []string{"--grandchild-sleep", d.String()}
	if a.ignoreSIGTERM {
		args = append(args, "--grandchild-ignore-sigterm")
	}
	cmd := exec.Command(exe, args...)
	cmd.ExtraFiles = []*os.File{readyW} // fd 3
	err = cmd.Start()
	_ = readyW.Close()
	if err != nil {
		return fmt.Errorf("start grandchild: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reap it should it end while we live

	_ = ready.SetReadDeadline(time.Now().Add(grandchildReadyTimeout))
	if _, err := io.Copy(io.Discard, ready); err != nil {
		return fmt.Errorf("grandchild %d never reported ready: %w", cmd.Process.Pid, err)
	}
	return a.out.write(grandchildLine{Type: "system", Subtype: "grandchild", PID: cmd.Process.Pid, SessionID: a.out.sessionID})
}

// grandchild is the spawned process's whole life.
func grandchild(sleep time.Duration, ignoreSIGTERM bool) int {
	if ignoreSIGTERM {
		signal.Ignore(syscall.SIGTERM)
	}
	_ = os.NewFile(3, "ready").Close() // set up: release the agent
	time.Sleep(sleep)
	return 0
}

// callMCP calls a tool of Zimmer's MCP and prints the call and its result
// as a tool_use / tool_result pair. Failures are printed, not fatal: a
// refused call is something a scenario may want to see.
func (a *agent) callMCP(ctx context.Context, tool string, args map[string]any) error {
	id := a.out.nextID("toolu")
	if err := a.out.assistant(toolUseBlock{Type: "tool_use", ID: id, Name: "mcp__zimmer__" + tool, Input: args}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, mcpCallTimeout)
	defer cancel()
	res, err := a.mcp.call(ctx, tool, args)
	if err != nil {
		return a.out.toolResult(id, "MCP error: "+err.Error(), true)
	}
	return a.out.toolResult(id, res.Content, res.IsError)
}

// createPullRequest prints what opening a pull request with the GitHub CLI
// looks like in Claude Code's transcript: a Bash tool call running
// `gh pr create`, and its result, gh's progress line (stderr) and the new
// pull request's URL alone on the last line (stdout). Nothing is opened.
func (a *agent) createPullRequest(pr rules.PullRequestRef) error {
	id := a.out.nextID("toolu")
	call := map[string]any{"command": "gh pr create --fill --base main", "description": "Open a pull request for this branch"}
	if err := a.out.assistant(toolUseBlock{Type: "tool_use", ID: id, Name: "Bash", Input: call}); err != nil {
		return err
	}
	out := fmt.Sprintf("\nCreating pull request for zimmer-demo into main in %s\n\n%s", pr.Repository(), pr.URL())
	return a.out.toolResult(id, out, false)
}

// elicit reports an elicitation and blocks up to s.duration for its answer:
// a line on stdin (when the prompt came from a file). A JSON object with an
// "action" is taken as the MCP elicitation response ({"action":"decline"}),
// and one naming another elicitation's "id" (a late answer to an earlier
// question) is ignored, said on stderr; any other line accepts, as
// {"answer": line}. Signals keep their usual effect meanwhile: SIGTERM
// ends the agent unless ignore-sigterm.
func (a *agent) elicit(s step) error {
	id := a.out.nextID("elicit")
	if err := a.out.write(elicitationLine{
		Type: "elicitation", ID: id, Text: s.text,
		RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"answer": map[string]any{"type": "string"}},
			"required":   []string{"answer"},
		},
		TimeoutMS: s.duration.Milliseconds(), SessionID: a.out.sessionID,
	}); err != nil {
		return err
	}
	if a.answers == nil && a.stdin != nil {
		a.answers = readAnswers(a.stdin)
	}
	answers := a.answers
	timeout := time.NewTimer(s.duration)
	defer timeout.Stop()
	result := elicitationResultLine{Type: "system", Subtype: "elicitation_result", ID: id, SessionID: a.out.sessionID}
	for {
		select {
		case answer, ok := <-answers:
			if !ok {
				answers = nil // stdin closed: only the timeout is left
				continue
			}
			answered, action, content := parseAnswer(answer)
			if answered != "" && answered != id {
				_, _ = fmt.Fprintf(a.stderr, "zimmer-demo-agent: ignoring an answer to %s: waiting on %s\n", answered, id)
				continue
			}
			result.Action, result.Content = action, content
		case <-timeout.C:
			result.Action = "timeout"
		}
		return a.out.write(result)
	}
}

func readAnswers(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				ch <- line
			}
		}
	}()
	return ch
}

// parseAnswer reads one answer line: the id of the elicitation it answers
// ("" when it names none), its action and content.
func parseAnswer(line string) (id, action string, content map[string]any) {
	var resp struct {
		ID      string         `json:"id"`
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if json.Unmarshal([]byte(line), &resp) == nil && resp.Action != "" {
		return resp.ID, resp.Action, resp.Content
	}
	return "", "accept", map[string]any{"answer": line}
}
