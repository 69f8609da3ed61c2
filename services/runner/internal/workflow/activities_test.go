package workflow_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/process"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// binDir holds the binaries the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "runner-workflow-test-"); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(binDir)
	os.Exit(code)
}

// demoAgent builds cmd/zimmer-demo-agent once per test binary.
var demoAgent = sync.OnceValues(func() (string, error) {
	dir := binDir
	bin := filepath.Join(dir, "zimmer-demo-agent")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/zimmerhq/zimmer/services/runner/cmd/zimmer-demo-agent").CombinedOutput()
	if err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	return bin, nil
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

type fakeLifecycle struct {
	mu sync.Mutex
	// mintFailures: that many mints answer Unavailable first.
	mintFailures int
	minted       []rw.CredentialRequest
	revoked      []string
	requests     []rw.TransitionRequest
	notes        []timelineNote
	// The turn slots: asks answered "wait" before the grant, a refusal
	// instead, and the asks and releases seen.
	slotWaits    int
	slotRefused  bool
	slotAsks     []rw.SlotRequest
	slotReleases []rw.SlotRequest
}

func (f *fakeLifecycle) Transition(_ context.Context, req rw.TransitionRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	return nil
}

func (f *fakeLifecycle) MintCredential(_ context.Context, req rw.CredentialRequest) (string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mintFailures > 0 {
		f.mintFailures--
		return "", "", status.Error(codes.Unavailable, "lifecycle is restarting")
	}
	f.minted = append(f.minted, req)
	return "cred-1", "zsc_test", nil
}

func (f *fakeLifecycle) RevokeCredential(_ context.Context, _ int64, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, id)
	return nil
}

func (f *fakeLifecycle) RevokeTurnCredentials(context.Context, int64, string) error { return nil }

func (f *fakeLifecycle) SweepNodeCredentials(context.Context, string, string) (int, error) {
	return 0, nil
}

func (f *fakeLifecycle) SessionState(context.Context, int64) (rw.SessionState, error) {
	return rw.SessionState{Status: "running"}, nil
}

func (f *fakeLifecycle) AbandonRecovery(context.Context, int64, string) error { return nil }

// AcquireSlot grants a slot once slotWaits asks have been answered "wait"
// (each at the next place in line), or refuses when slotRefused.
func (f *fakeLifecycle) AcquireSlot(_ context.Context, req rw.SlotRequest) (rw.SlotAnswer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slotAsks = append(f.slotAsks, req)
	if f.slotRefused {
		return rw.SlotAnswer{}, &rw.RefusedError{Event: "acquire a turn slot", Message: "session 7 is archived"}
	}
	if f.slotWaits > 0 {
		f.slotWaits--
		return rw.SlotAnswer{Position: f.slotWaits + 1}, nil
	}
	return rw.SlotAnswer{Granted: true}, nil
}

func (f *fakeLifecycle) ReleaseSlot(_ context.Context, req rw.SlotRequest) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slotReleases = append(f.slotReleases, req)
	return nil, nil
}

// timelineNote is a line written on a session's timeline.
type timelineNote struct {
	SessionID int64
	ID        string
	Message   string
	Warning   bool
}

func (f *fakeLifecycle) Note(_ context.Context, sessionID int64, noteID, message string, warning bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.notes {
		if n.ID == noteID {
			return nil // seen before: written once
		}
	}
	f.notes = append(f.notes, timelineNote{SessionID: sessionID, ID: noteID, Message: message, Warning: warning})
	return nil
}

func (f *fakeLifecycle) lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, n := range f.notes {
		out = append(out, n.Message)
	}
	return out
}

type recordingSignaler struct {
	mu      sync.Mutex
	signals []rw.ElicitationSignal
}

func (s *recordingSignaler) SignalWorkflow(_ context.Context, _, _, name string, arg any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == rw.SignalElicitation {
		s.signals = append(s.signals, arg.(rw.ElicitationSignal))
	}
	return nil
}

type recordingSink struct {
	mu     sync.Mutex
	events []agent.Event
	turns  []string
}

func (s *recordingSink) Append(_ context.Context, _ int64, turnID string, e agent.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
	s.turns = append(s.turns, turnID)
	return nil
}

type turnFixture struct {
	acts      *rw.Activities
	lifecycle *fakeLifecycle
	signals   *recordingSignaler
	sink      *recordingSink
	env       *testsuite.TestActivityEnvironment
}

func newTurnFixture(t *testing.T) *turnFixture {
	t.Helper()
	bin, err := demoAgent()
	require.NoError(t, err)
	reg, err := agent.NewRegistry(agent.RuntimeDemo, agent.NewDemo(agent.DemoOptions{Path: bin}))
	require.NoError(t, err)
	f := &turnFixture{lifecycle: &fakeLifecycle{}, signals: &recordingSignaler{}, sink: &recordingSink{}}
	f.acts = &rw.Activities{
		Lifecycle: f.lifecycle, Runtimes: reg, MCPURL: "http://127.0.0.1:1/mcp", Node: "n1", Incarnation: "inc-1",
		Signaler: f.signals, Transcripts: f.sink, HeartbeatInterval: 50 * time.Millisecond,
		Process: process.Options{Ladder: process.Ladder{TermGrace: 200 * time.Millisecond, KillGrace: 100 * time.Millisecond, SweepGrace: 100 * time.Millisecond}},
	}
	var suite testsuite.WorkflowTestSuite
	f.env = suite.NewTestActivityEnvironment()
	f.acts.RegisterNode(f.env)
	return f
}

func (f *turnFixture) run(t *testing.T, prompt string) rw.TurnResult {
	t.Helper()
	req := rw.RunTurnRequest{
		Session: rw.SessionSpec{ID: 7, Runtime: "demo"}, TurnID: "session-7/turn-1", Prompt: prompt,
		Workspace:        rw.Workspace{Workdir: t.TempDir(), StateDir: t.TempDir()},
		RuntimeSessionID: "4a0c8d55-1111-4222-8333-444455556666",
	}
	val, err := f.env.ExecuteActivity(rw.ActivityRunTurn, req)
	require.NoError(t, err)
	var result rw.TurnResult
	require.NoError(t, val.Get(&result))
	require.Equal(t, []rw.CredentialRequest{{SessionID: 7, TurnID: "session-7/turn-1", Node: "n1", Incarnation: "inc-1", TTL: 7 * 24 * time.Hour}},
		f.lifecycle.minted, "each turn gets the session's own credential, naming the turn, its node and runner, and lives no longer than a turn may")
	require.Equal(t, []string{"cred-1"}, f.lifecycle.revoked, "and it is revoked when the turn ends")
	return result
}

func TestRunTurnExitZeroKeepsTheTranscript(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	result := f.run(t, "@demo say hello from the demo")

	require.True(t, result.StatusKnown)
	require.Zero(t, result.ExitCode)
	require.Empty(t, result.Signal)
	require.Equal(t, "4a0c8d55-1111-4222-8333-444455556666", result.RuntimeSessionID)
	var said bool
	for i, e := range f.sink.events {
		require.Equal(t, "session-7/turn-1", f.sink.turns[i])
		if e.Kind == agent.KindAssistant && e.Text == "hello from the demo" {
			said = true
		}
	}
	require.True(t, said, "the agent's words reach the transcript: %+v", f.sink.events)
	require.Empty(t, f.signals.signals)
}

func TestRunTurnReportsTheExitCodeAndStderr(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	result := f.run(t, "@demo exit 3")

	require.True(t, result.StatusKnown)
	require.Equal(t, 3, result.ExitCode)
	require.NotEmpty(t, result.StderrTail, "the demo agent says why it exits")
}

func TestRunTurnReportsASignalZimmerDidNotSend(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	result := f.run(t, "@demo signal SIGKILL")

	require.Equal(t, "SIGKILL", result.Signal)
	require.False(t, result.SignalSentByUs)
}

func TestRunTurnSignalsAnElicitationAndItsEnd(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	result := f.run(t, "@demo elicit 300ms may I?\n@demo say went on")

	require.Zero(t, result.ExitCode)
	require.Len(t, f.signals.signals, 2, "%+v", f.signals.signals)
	require.True(t, f.signals.signals[0].Blocked)
	require.Equal(t, "session-7/turn-1", f.signals.signals[0].TurnID)
	require.False(t, f.signals.signals[1].Blocked)
}

// An answer reaches the demo agent on its stdin while it waits, and the
// agent's result line says what it did; an answer to another question, or
// one it no longer waits on, is refused as not pending.
func TestAnAnswerReachesTheAgentWaitingOnIt(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	done := make(chan error, 1)
	go func() {
		_, err := f.env.ExecuteActivity(rw.ActivityRunTurn, rw.RunTurnRequest{
			Session: rw.SessionSpec{ID: 7, Runtime: "demo"}, TurnID: "session-7/turn-1", Prompt: "@demo elicit 30s may I?\n@demo say went on",
			Workspace: rw.Workspace{Workdir: t.TempDir(), StateDir: t.TempDir()},
		})
		done <- err
	}()
	var question *rw.ElicitationInfo
	require.Eventually(t, func() bool {
		f.signals.mu.Lock()
		defer f.signals.mu.Unlock()
		if len(f.signals.signals) > 0 {
			question = f.signals.signals[0].Elicitation
		}
		return question != nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "may I?", question.Message)
	require.Equal(t, "session-7/turn-1", question.TurnID)
	require.Equal(t, "object", question.RequestedSchema["type"])
	require.False(t, question.ExpiresAt.IsZero(), "the agent said how long it waits")

	notPending := func(err error, words string) {
		t.Helper()
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		require.Equal(t, rw.ErrElicitationNotPending, appErr.Type())
		require.Contains(t, appErr.Message(), words)
	}
	_, err := f.acts.DeliverElicitationAnswer(t.Context(), rw.AnswerElicitationRequest{TurnID: "session-7/turn-1", ID: "elicit_other", Action: "cancel"})
	notPending(err, `waits on elicitation "`+question.ID+`", not "elicit_other"`)
	_, err = f.acts.DeliverElicitationAnswer(t.Context(), rw.AnswerElicitationRequest{TurnID: "session-7/turn-9", ID: question.ID, Action: "cancel"})
	notPending(err, "not running on runner node n1")

	got, err := f.acts.DeliverElicitationAnswer(t.Context(), rw.AnswerElicitationRequest{TurnID: "session-7/turn-1", ID: question.ID,
		Action: "accept", Content: map[string]any{"answer": "yes, go"}})
	require.NoError(t, err)
	require.Equal(t, "accept", got.Action)
	_, err = f.acts.DeliverElicitationAnswer(t.Context(), rw.AnswerElicitationRequest{TurnID: "session-7/turn-1", ID: question.ID, Action: "cancel"})
	require.Error(t, err, "answered once: no second answer")

	require.NoError(t, <-done)
	require.Len(t, f.signals.signals, 2)
	require.Equal(t, "accept", f.signals.signals[1].Outcome)
	var raw []string
	for _, e := range f.sink.events {
		raw = append(raw, e.Raw)
	}
	require.Contains(t, strings.Join(raw, "\n"), `"content":{"answer":"yes, go"}`, "the agent's result carries the answer")
	require.Contains(t, strings.Join(raw, "\n"), "went on")
}

// A question the agent stops waiting on ends the block as expired.
func TestAnElicitationNobodyAnswersExpires(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	result := f.run(t, "@demo elicit 200ms anyone?\n@demo say went on")
	require.Zero(t, result.ExitCode)
	require.Len(t, f.signals.signals, 2)
	require.Equal(t, "expired", f.signals.signals[1].Outcome)
	_, err := f.acts.DeliverElicitationAnswer(t.Context(), rw.AnswerElicitationRequest{TurnID: "session-7/turn-1", ID: "elicit_demo_1", Action: "cancel"})
	require.ErrorContains(t, err, "not running on runner node n1", "the turn is over")
}

func TestRunTurnRefusesAnUnknownRuntime(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	_, err := f.env.ExecuteActivity(rw.ActivityRunTurn, rw.RunTurnRequest{
		Session: rw.SessionSpec{ID: 7, Runtime: "nope"}, TurnID: "t",
		Workspace: rw.Workspace{Workdir: t.TempDir(), StateDir: t.TempDir()},
	})
	require.ErrorContains(t, err, `unknown agent runtime "nope"`)
	require.ErrorContains(t, err, rw.ErrTurnNotStarted)
}

func TestStopTurnEndsTheProcessByTheLadder(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	done := f.runInBackground(t, "@demo say ready\n@demo sleep 60s")

	result, err := f.acts.StopTurn(t.Context(), "session-7/turn-1")
	require.NoError(t, err)
	require.Equal(t, "terminated", result, "the original's word for a live process the ladder ended")
	select {
	case o := <-done:
		require.NoError(t, o.err)
		require.Equal(t, "SIGTERM", o.result.Signal)
		require.True(t, o.result.SignalSentByUs, "a stopped turn is not a signal death to recover")
	case <-time.After(10 * time.Second):
		t.Fatal("RunTurn did not return after StopTurn")
	}
	lines := f.lifecycle.lines()
	require.Len(t, lines, 1, "one line for the one step the ladder took: %q", lines)
	require.Regexp(t, `^\[Process\] SIGTERM sent to the process group of turn session-7/turn-1's agent \(pid \d+\)\. Result: terminated\.$`, lines[0])
	require.Equal(t, int64(7), f.lifecycle.notes[0].SessionID, "on the session whose process it was")

	result, err = f.acts.StopTurn(t.Context(), "session-7/turn-1")
	require.NoError(t, err, "a turn already over is no error")
	require.Equal(t, "already_dead", result)
	require.Len(t, f.lifecycle.lines(), 1, "and nothing of it is told again")
}

// An agent that outlives SIGTERM's grace is killed: each rung is a line on
// its session's timeline, the last with the result word.
func TestStopTurnTellsTheEscalationToSIGKILL(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	done := f.runInBackground(t, "@demo ignore-sigterm\n@demo say ready\n@demo sleep 60s")

	result, err := f.acts.StopTurn(t.Context(), "session-7/turn-1")
	require.NoError(t, err)
	require.Equal(t, "terminated", result)
	o := <-done
	require.NoError(t, o.err)
	require.Equal(t, "SIGKILL", o.result.Signal)
	lines := f.lifecycle.lines()
	require.Len(t, lines, 2, "%q", lines)
	require.Contains(t, lines[0], "SIGTERM sent to the process group of turn session-7/turn-1's agent")
	require.Regexp(t, `outlived SIGTERM's 200ms grace: escalated to SIGKILL, its group first\. Result: terminated\.$`, lines[1])
}

type turnOutcomeOrErr struct {
	result rw.TurnResult
	err    error
}

// runInBackground starts RunTurn for turn 1 with prompt and returns once
// the agent said "ready"; its outcome arrives on the channel.
func (f *turnFixture) runInBackground(t *testing.T, prompt string) <-chan turnOutcomeOrErr {
	t.Helper()
	done := make(chan turnOutcomeOrErr, 1)
	go func() { // require may not fail the test from here: the result travels back
		val, err := f.env.ExecuteActivity(rw.ActivityRunTurn, rw.RunTurnRequest{
			Session: rw.SessionSpec{ID: 7, Runtime: "demo"}, TurnID: "session-7/turn-1", Prompt: prompt,
			Workspace: rw.Workspace{Workdir: t.TempDir(), StateDir: t.TempDir()},
		})
		var o turnOutcomeOrErr
		if o.err = err; err == nil {
			o.err = val.Get(&o.result)
		}
		done <- o
	}()
	require.Eventually(t, func() bool {
		f.sink.mu.Lock()
		defer f.sink.mu.Unlock()
		for _, e := range f.sink.events {
			if e.Kind == agent.KindAssistant && e.Text == "ready" {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the agent never said it was ready")
	return done
}

// A StopTurn that found no process proves none of that turn will run on
// the node: a RunTurn lost on its way to the start (its heartbeat timed out
// while it minted the credential, say) does not start one afterwards.
func TestStopTurnBeforeTheStartForbidsIt(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	result, err := f.acts.StopTurn(t.Context(), "session-7/turn-1")
	require.NoError(t, err)
	require.Equal(t, "already_dead", result, "no process of the turn ran")

	req := rw.RunTurnRequest{
		Session: rw.SessionSpec{ID: 7, Runtime: "demo"}, TurnID: "session-7/turn-1", Prompt: "@demo say too late",
		Workspace: rw.Workspace{Workdir: t.TempDir(), StateDir: t.TempDir()},
	}
	_, err = f.env.ExecuteActivity(rw.ActivityRunTurn, req)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, rw.ErrTurnNotStarted, appErr.Type())
	require.Contains(t, appErr.Message(), "stopped (StopTurn) before its process started")
	require.Empty(t, f.sink.events, "no process ran")

	req.TurnID = "session-7/turn-2"
	val, err := f.env.ExecuteActivity(rw.ActivityRunTurn, req)
	require.NoError(t, err, "another turn of the session is not affected")
	var ran rw.TurnResult
	require.NoError(t, val.Get(&ran))
	require.Zero(t, ran.ExitCode)
}

// A runner shutting down (a deploy) stops its agents by the ladder and says
// so, so the workflow retries the turn instead of waiting for a lost
// heartbeat.
func TestRunTurnAtShutdownStopsTheAgentAndSaysSo(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	stop := make(chan struct{})
	f.env.SetWorkerStopChannel(stop)
	time.AfterFunc(300*time.Millisecond, func() { close(stop) })
	start := time.Now()
	result := f.run(t, "@demo sleep 30s")

	require.Less(t, time.Since(start), 10*time.Second, "stopped, not waited for")
	require.True(t, result.Shutdown)
	require.True(t, result.SignalSentByUs, "the ladder's signal")
}

// A process the agent left in its group when it exited does not outlive the
// turn.
func TestRunTurnSweepsWhatTheAgentLeftRunning(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	result := f.run(t, "@demo spawn-grandchild 60s\n@demo say done")
	require.Zero(t, result.ExitCode)
	var pid int
	for _, e := range f.sink.events {
		if e.Type == "system/grandchild" {
			var line struct{ PID int }
			require.NoError(t, json.Unmarshal([]byte(e.Raw), &line))
			pid = line.PID
		}
	}
	require.NotZero(t, pid, "the demo agent reports its grandchild: %+v", f.sink.events)
	require.Eventually(t, func() bool { return unix.Kill(pid, 0) != nil }, 5*time.Second, 20*time.Millisecond,
		"the grandchild %d outlived its turn", pid)
}

// A lifecycle that does not answer for a while (restarting, its database
// down) delays the turn's start; it does not fail the session.
func TestRunTurnWaitsOutALifecycleThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	f.lifecycle.mintFailures = 3
	result := f.run(t, "@demo say after the outage")
	require.Zero(t, result.ExitCode)
	require.Equal(t, 0, f.lifecycle.mintFailures, "asked until it answered")
}
