package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

func handedOver(jobID, prompt string) rw.HandOver {
	return rw.HandOver{Delivered: true, JobID: jobID, Prompt: prompt}
}

// continued is the state the run handed to its next run.
func (h *harness) continued() rw.State {
	h.t.Helper()
	var can *workflow.ContinueAsNewError
	require.ErrorAs(h.t, h.env.GetWorkflowError(), &can)
	var st rw.State
	require.NoError(h.t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &st))
	return st
}

func (h *harness) turnIDs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, len(h.turns))
	for i, r := range h.turns {
		out[i] = r.TurnID
	}
	return out
}

func (h *harness) drainedAfter() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, len(h.drains))
	for i, d := range h.drains {
		out[i] = d.FromJobID
	}
	return out
}

// A clean exit whose drain delivers runs the next turn at once, under the
// job lifecycle made the session's running one and with the message as its
// prompt, and fires no transition: the session never leaves running. The
// queue running dry pauses as before.
func TestACleanExitHandsTheNextTurnsOverThenPauses(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.queue = map[string]rw.HandOver{
		"session-7/turn-1": handedOver("queue/m1", "@demo say second"),
		"queue/m1":         handedOver("queue/m2", "@demo say third"),
	}
	const took = time.Minute
	h.onTurns(took, exited(0), exited(0), exited(0))
	start := h.env.Now()
	h.run(3, first("@demo say first"))

	require.Equal(t, []string{rw.EventStart, rw.EventPause}, h.events(), "no transition between handed-over turns")
	require.Equal(t, "session-7/turn-1", h.transitions[0].RunningJobID)
	require.Equal(t, []string{"session-7/turn-1", "queue/m1", "queue/m2"}, h.turnIDs())
	require.Equal(t, []string{"session-7/turn-1", "queue/m1", "queue/m2"}, h.drainedAfter(), "each ended turn is drained once")
	for i, prompt := range []string{"@demo say first", "@demo say second", "@demo say third"} {
		require.Equal(t, prompt, h.turns[i].Prompt)
		require.Equal(t, i > 0, h.turns[i].Resume, "a handed-over turn resumes the conversation")
		require.Equal(t, h.turns[0].RuntimeSessionID, h.turns[i].RuntimeSessionID)
	}
	require.Equal(t, start.Add(3*took), h.env.Now(), "each turn started the moment the one before ended")
	st := h.continued()
	require.Equal(t, 3, st.Turns, "handed-over turns count")
	require.Empty(t, st.Pending)
}

// A handed-over turn is a turn of its own: its signal deaths get a fresh
// recovery budget, and its recoveries go back to the workflow's turn ids.
func TestAHandedOverTurnGetsAFreshRecoveryBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.queue = map[string]rw.HandOver{"session-7/turn-4": handedOver("queue/m1", "queued")}
	h.onTurns(time.Second,
		killed("SIGKILL"), killed("SIGKILL"), killed("SIGKILL"), exited(0), // the budget spent
		killed("SIGKILL"), killed("SIGKILL"), killed("SIGKILL"), exited(0))
	h.run(2, first("work"))

	recovered := []string{rw.EventPause, rw.EventResume, rw.EventPause, rw.EventResume, rw.EventPause, rw.EventResume}
	want := append(append(append([]string{rw.EventStart}, recovered...), recovered...), rw.EventPause)
	require.Equal(t, want, h.events(), "the handed-over turn recovers three times too, then pauses")
	require.Equal(t, []string{
		"session-7/turn-1", "session-7/turn-2", "session-7/turn-3", "session-7/turn-4",
		"queue/m1", "session-7/turn-6", "session-7/turn-7", "session-7/turn-8",
	}, h.turnIDs())
	require.Equal(t, []string{"session-7/turn-4", "session-7/turn-8"}, h.drainedAfter(), "the drain names the turn that exited")
	require.Contains(t, h.turns[5].Prompt, "queued", "a recovery runs the handed-over prompt again")
}

// The drain retries until the queue answers, and the queue's answer is the
// same however often it is asked: the next turn is handed over once.
func TestTheDrainIsRetriedUntilTheQueueAnswers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.queueErrs = 2
	h.queue = map[string]rw.HandOver{"session-7/turn-1": handedOver("queue/m1", "next")}
	h.onTurns(time.Second, exited(0), exited(0))
	h.run(2, first("work"))

	require.Equal(t, []string{"session-7/turn-1", "session-7/turn-1", "session-7/turn-1", "queue/m1"}, h.drainedAfter())
	require.Equal(t, []string{"session-7/turn-1", "queue/m1"}, h.turnIDs(), "handed over once")
	require.Equal(t, []string{rw.EventStart, rw.EventPause}, h.events())
}

// An answer retrying cannot change (the queue refusing the runner) hands
// nothing over: the turn pauses, and the queue's own after-pause drain
// delivers what waits.
func TestARefusedDrainPauses(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.queueErr = temporal.NewNonRetryableApplicationError("permission denied", rw.ErrDrainRefused, nil)
	h.queue = map[string]rw.HandOver{"session-7/turn-1": handedOver("queue/m1", "never asked for")}
	h.onTurns(time.Second, exited(0))
	h.run(1, first("work"))

	require.Len(t, h.drains, 1, "not retried")
	require.Equal(t, []string{rw.EventStart, rw.EventPause}, h.events())
}

// A run that continues as new right after a hand-over carries the handed-
// over turn first in line (ahead of a request already waiting), and the
// next run runs it at once without a transition.
func TestContinueAsNewLosesNoHandedOverTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.queue = map[string]rw.HandOver{"session-7/turn-1": handedOver("queue/m1", "@demo say second")}
	h.onTurns(time.Minute, exited(0))
	// Waiting already while the first turn runs (the queue sees to it that
	// none does in life; the order is what matters here).
	restart := rw.TurnRequest{RequestID: "ev-2", Kind: rw.KindResume, JobID: "resume/r1", Session: spec}
	h.run(1, first("@demo say first"), restart)

	st := h.continued()
	require.Equal(t, []rw.TurnRequest{
		{RequestID: "queue/m1", Kind: rw.KindHandOver, JobID: "queue/m1", Prompt: "@demo say second", Session: spec},
		restart,
	}, st.Pending)
	require.Contains(t, st.Seen, "queue/m1")
	require.Equal(t, 1, st.Turns)
	require.Equal(t, []string{rw.EventStart}, h.events(), "no pause before the handed-over turn")

	next := newHarness(t)
	next.onTurns(time.Minute, exited(0))
	next.mockDrain()
	next.env.ExecuteWorkflow(rw.WorkflowName, st)
	require.True(t, next.env.IsWorkflowCompleted())
	require.Equal(t, []string{"queue/m1"}, next.turnIDs(), "the next run begins with the handed-over turn")
	require.Equal(t, "@demo say second", next.turns[0].Prompt)
	require.True(t, next.turns[0].Resume)
	require.Equal(t, []string{rw.EventPause}, next.events(), "it runs in the running session; its end pauses")
	require.Equal(t, []rw.TurnRequest{restart}, next.continued().Pending, "the restart waits its turn")
}

// InterruptTurn while the queue answers the drain finds no process; its
// caller owns the session's next state, so a turn the queue handed over
// meanwhile does not start, and the runner fires nothing.
func TestAnInterruptDuringTheDrainStartsNoHandedOverTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Minute, exited(0), exited(0))
	h.queueTakes = time.Minute
	h.queue = map[string]rw.HandOver{"session-7/turn-1": handedOver("queue/m1", "next")}
	answer := h.interruptAt(90 * time.Second) // the turn ended at 1m; the queue answers at 2m
	h.run(1, first("work"))

	require.NoError(t, answer.err)
	require.True(t, answer.done)
	require.Equal(t, rw.InterruptTurnResult{}, answer.result, "no process to halt")
	require.Equal(t, []string{"session-7/turn-1"}, h.turnIDs())
	require.Equal(t, []string{rw.EventStart}, h.events())
	require.Empty(t, h.continued().Pending)
}

// A queue interrupt of the turn whose process just ended, landing while the
// queue answers its drain, halts nothing and marks nothing: the turn's end
// is routed, and the message the queue hands over (the interrupt's own,
// which it put first in line) runs whole.
func TestAQueueInterruptDuringTheDrainSparesTheHandedOverTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Minute, exited(0), exited(0))
	h.queueTakes = time.Minute
	h.queue = map[string]rw.HandOver{"session-7/turn-1": handedOver("queue/m1", "next")}
	answer := h.interruptTurnAt(90*time.Second, rw.InterruptTurnRequest{Reason: "queue interrupt", TurnID: "session-7/turn-1"})
	h.run(2, first("work"))

	require.NoError(t, answer.err)
	require.True(t, answer.done)
	require.Equal(t, rw.InterruptTurnResult{}, answer.result, "no process to halt")
	require.Equal(t, []string{"session-7/turn-1", "queue/m1"}, h.turnIDs(), "the handed-over turn runs")
	require.Equal(t, []string{rw.EventStart, rw.EventPause}, h.events(), "and the session rests after it")
}

// Recorded runs replay on today's code, so a change of the workflow's
// commands fails here. Each history is a session's run on the dev server
// with every activity faked: a first turn, then a restart's turn, each
// exiting 0.
//   - session_handover.json (TestRecordTheReplayedRun records it): the
//     first turn's drain handed queue/m1 over (no transition), whose drain
//     answered nothing.
func TestRecordedRunsReplay(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"testdata/session_handover.json"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(rw.Session, workflow.RegisterOptions{Name: rw.WorkflowName})
		require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file), file)
	}
}

// The drain activity asks the queue named by Activities.Queue for the
// ended turn's successor; no queue hands nothing over, and a refusal is not
// retried.
func TestTheDrainActivityAsksTheQueue(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	drain := func(q rw.Queue) (rw.HandOver, error) {
		env := suite.NewTestActivityEnvironment()
		(&rw.Activities{Queue: q}).RegisterShared(env)
		val, err := env.ExecuteActivity(rw.ActivityDrain, rw.DrainRequest{SessionID: 7, FromJobID: "session-7/turn-1"})
		if err != nil {
			return rw.HandOver{}, err
		}
		var h rw.HandOver
		require.NoError(t, val.Get(&h))
		return h, nil
	}
	q := &scriptedQueue{answer: handedOver("queue/m1", "next")}
	got, err := drain(q)
	require.NoError(t, err)
	require.Equal(t, handedOver("queue/m1", "next"), got)
	require.Equal(t, []string{"7 session-7/turn-1"}, q.asked)

	got, err = drain(nil)
	require.NoError(t, err)
	require.Equal(t, rw.HandOver{}, got, "no queue: nothing handed over")

	_, err = drain(&scriptedQueue{err: &rw.DrainRefusedError{Message: "permission denied"}})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, rw.ErrDrainRefused, appErr.Type())
	require.True(t, appErr.NonRetryable())

	_, err = drain(&scriptedQueue{err: errors.New("connection refused")})
	require.ErrorAs(t, err, &appErr)
	require.False(t, appErr.NonRetryable(), "the queue being away is retried")
}

type scriptedQueue struct {
	answer rw.HandOver
	err    error
	asked  []string
}

func (q *scriptedQueue) DeliverNextMessage(_ context.Context, sessionID int64, fromJobID string) (rw.HandOver, error) {
	q.asked = append(q.asked, fmt.Sprint(sessionID, " ", fromJobID))
	return q.answer, q.err
}

// The whole-path latencies' origins reach the processes that are timed: a
// turn's request time goes to its first process only (a recovery's process
// is not the request's start again), and a handed-over turn is timed from
// the exit that handed it over.
func TestTurnsCarryWhereTheirWholePathLatencyStarts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.queue = map[string]rw.HandOver{"session-7/turn-2": handedOver("queue/m1", "queued")}
	asked := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	exitedAt := time.Date(2026, 12, 2, 9, 5, 0, 0, time.UTC)
	recovered := exited(0)
	recovered.ExitedAt = exitedAt
	h.onTurns(time.Second, killed("SIGKILL"), recovered, exited(0))
	req := first("work")
	req.RequestedAt = asked
	h.run(2, req)

	require.Equal(t, []string{"session-7/turn-1", "session-7/turn-2", "queue/m1"}, h.turnIDs())
	require.Equal(t, rw.Asked{Kind: rw.KindFirst, At: asked}, h.turns[0].Asked, "the first process is timed from the creation")
	require.Zero(t, h.turns[1].Asked, "the recovery's process is not timed again")
	require.Equal(t, rw.Asked{Kind: rw.KindHandOver, At: exitedAt}, h.turns[2].Asked, "the handed-over turn is timed from the exit")
}
