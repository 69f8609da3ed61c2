package workflow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// lost is RunTurn's error when its heartbeat timed out: the node or its
// runner died mid-turn.
var lost = temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)

// turnOutcome is one scripted RunTurn: a result, or an error.
type turnOutcome struct {
	result rw.TurnResult
	err    error
}

// recoveryHarness extends the harness with what recovery reads: the
// session's state (one per read, the last repeated), StopTurn's answer,
// where each node activity ran, and AbandonRecovery.
type recoveryHarness struct {
	*harness
	states    []rw.SessionState
	stopErr   error
	stops     []string
	queues    []string // task queue of each RunTurn
	abandoned []rw.AbandonRequest
}

func newRecoveryHarness(t *testing.T, outcomes ...turnOutcome) *recoveryHarness {
	t.Helper()
	h := &recoveryHarness{harness: newHarness(t)}
	n := 0
	h.env.OnActivity(rw.ActivityRunTurn, mock.Anything, mock.Anything).After(time.Minute).Return(
		func(ctx context.Context, req rw.RunTurnRequest) (rw.TurnResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.turns = append(h.turns, req)
			h.queues = append(h.queues, activity.GetInfo(ctx).TaskQueue)
			require.Less(t, n, len(outcomes), "more turns than the test scripted")
			n++
			return outcomes[n-1].result, outcomes[n-1].err
		}).Maybe()
	h.env.OnActivity(rw.ActivityStopTurn, mock.Anything, mock.Anything).Return(
		func(_ context.Context, id string) (string, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.stops = append(h.stops, id)
			return "already_dead", h.stopErr
		}).Maybe()
	reads := 0
	h.env.OnActivity(rw.ActivitySessionState, mock.Anything, mock.Anything).Return(
		func(context.Context, int64) (rw.SessionState, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			require.NotEmpty(t, h.states, "the test did not say what lifecycle answers")
			s := h.states[min(reads, len(h.states)-1)]
			reads++
			return s, nil
		}).Maybe()
	h.env.OnActivity(rw.ActivityAbandonRecovery, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req rw.AbandonRequest) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.abandoned = append(h.abandoned, req)
			return nil
		}).Maybe()
	return h
}

// runFrom runs the workflow from a session that already ran turns (its
// conversation confirmed) until it has run turnsPerRun requests.
func (h *recoveryHarness) runFrom(st rw.State, turnsPerRun int, reqs ...rw.TurnRequest) {
	h.t.Helper()
	h.mockDrain()
	h.env.RegisterDelayedCallback(func() {
		for _, r := range reqs {
			h.env.SignalWorkflow(rw.SignalTurn, r)
		}
	}, 0)
	st.TurnsPerRun = turnsPerRun
	h.env.ExecuteWorkflow(rw.WorkflowName, st)
	require.True(h.t, h.env.IsWorkflowCompleted())
}

// lines are the lines written on the session's timeline, in order.
func (h *harness) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.notes))
	for _, n := range h.notes {
		out = append(out, n.Message)
	}
	return out
}

// ran is a session whose conversation is confirmed, on node n1, after 3
// turns.
func ran() rw.State {
	return rw.State{Session: spec, Node: "n1", Workspace: &rw.Workspace{Workdir: "/ws/7"}, RuntimeSessionID: "conv-1",
		Started: true, Confirmed: true, Turns: 3}
}

func resumeReq(job, prompt string) rw.TurnRequest {
	return rw.TurnRequest{RequestID: "ev-" + job, Kind: rw.KindResume, JobID: job, Prompt: prompt, Session: spec}
}

func TestLostTurnIsProvenGoneThenRecoveredWithANudgeNamingItsPath(t *testing.T) {
	t.Parallel()
	h := newRecoveryHarness(t, turnOutcome{err: lost}, turnOutcome{result: exited(0)})
	h.states = []rw.SessionState{{Status: "running", RunningJobID: "job-a"}}
	h.runFrom(ran(), 1, resumeReq("job-a", "fix the bug"))

	require.Equal(t, []string{"job-a"}, h.stops, "the lost turn's process is proven gone on its node first")
	require.Equal(t, []string{rw.EventPause, rw.EventResume, rw.EventPause}, h.events())
	require.Equal(t, "recovery", h.transitions[0].PausedBy, "parked as a recovery between the turns")
	require.True(t, h.transitions[1].SystemRecovery, "a recovery resume keeps the wake-ups")
	require.Equal(t, "session-7/turn-5", h.transitions[1].RunningJobID)
	require.Len(t, h.turns, 2)
	second := h.turns[1]
	require.Equal(t, "session-7/turn-5", second.TurnID)
	require.True(t, second.Resume, "the runtime's conversation is resumed")
	require.True(t, strings.HasPrefix(second.Prompt, domain.SystemRecoveryPrompt), second.Prompt)
	require.Contains(t, second.Prompt, "Recovery path: interrupted turn")
	require.Contains(t, second.Prompt, `node "n1"`)
	require.Equal(t, []rw.DrainRequest{{SessionID: sessionID, FromJobID: "job-a"}, {SessionID: sessionID, FromJobID: "session-7/turn-5"}},
		h.drains, "the queue is asked for a message before the nudge, and after the clean exit")
	require.Equal(t, []string{"zimmer-runner-n1", "zimmer-runner-n1"}, h.queues)
	require.Equal(t, 1, h.cloneAsks, "the clone is looked for on its node before a turn runs in it")
	require.Equal(t, []string{`[Recovery] Turn job-a was lost (no heartbeat from node "n1"); Zimmer resumed the session with the ` +
		`recovery nudge (path: interrupted turn; recovery 1 of 12) as turn session-7/turn-5.`}, h.lines(),
		"one line on the timeline says what recovery decided and why")
}

func TestLostTurnDeliversAQueuedMessageInsteadOfTheNudge(t *testing.T) {
	t.Parallel()
	h := newRecoveryHarness(t, turnOutcome{err: lost}, turnOutcome{result: exited(0)})
	h.states = []rw.SessionState{{Status: "running", RunningJobID: "job-a"}}
	h.queue = map[string]rw.HandOver{"job-a": {Delivered: true, JobID: "queue/job-b", Prompt: "the user's message"}}
	h.runFrom(ran(), 2, resumeReq("job-a", "fix the bug"))

	require.Equal(t, []string{rw.EventPause}, h.events(), "no pause and resume around the hand-over: the session stays running")
	require.Len(t, h.turns, 2)
	require.Equal(t, "queue/job-b", h.turns[1].TurnID)
	require.Equal(t, "the user's message", h.turns[1].Prompt)
	require.Equal(t, []string{`[Recovery] Turn job-a was lost (no heartbeat from node "n1"); the queue's next message runs ` +
		`instead of the recovery nudge, as turn queue/job-b, and the rest of the queue stays pending behind it.`}, h.lines())
}

func TestLostTurnStandsDownWhenTheSessionIsAtRest(t *testing.T) {
	t.Parallel()
	for s, row := range map[rw.SessionState]string{
		{Status: "needs_input"}:                   "needs_input with no paused_by: its turn had finished, nothing was interrupted",
		{Status: "needs_input", PausedBy: "user"}: "needs_input, paused on purpose: the pause was deliberate",
		{Status: "waiting", AwaitingWake: true}:   "waiting, asleep on a wake still ahead: the wake will fire",
		{Status: "archived"}:                      "failed, archived or deleted: at rest for good",
	} {
		h := newRecoveryHarness(t, turnOutcome{err: lost})
		h.states = []rw.SessionState{s}
		h.runFrom(ran(), 1, resumeReq("job-a", "fix the bug"))

		require.Empty(t, h.events(), "%+v: nothing was interrupted, nothing runs", s)
		require.Len(t, h.turns, 1)
		require.Equal(t, []string{"job-a"}, h.stops)
		require.Equal(t, []string{`[Recovery] Turn job-a was lost (no heartbeat from node "n1"); Zimmer stood down, ` +
			"as the stand-down table says for a session " + row + "."}, h.lines(), "the row that decided is on the timeline")
		require.Zero(t, h.cloneAsks, "no turn runs: the clone does not matter")
	}
}

func TestDeadNodeFailsTheSessionNamingItAndARestartRunsOnALiveNode(t *testing.T) {
	t.Parallel()
	h := newRecoveryHarness(t, turnOutcome{err: lost}, turnOutcome{result: exited(0)})
	h.stopErr = temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
	h.states = []rw.SessionState{{Status: "failed"}}
	restart := resumeReq("resume/x", "")
	restart.RequestID = "ev-restart"
	h.runFrom(ran(), 2, resumeReq("job-a", "fix the bug"), restart)

	require.Equal(t, []string{rw.EventFail, rw.EventPause}, h.events())
	reason := h.transitions[0].FailureReason
	require.Contains(t, reason, `runner node "n1"`)
	require.Contains(t, reason, "declared it dead")
	require.Contains(t, reason, "Restart the session")
	require.Equal(t, []string{rw.ClonesTaskQueue}, h.prepared, "the restart makes the clone anew on whichever live node takes it")
	require.Equal(t, []string{"n1"}, h.takeOvers, "taking the workspace over from the dead node")
	require.Equal(t, []string{"zimmer-runner-n1", "zimmer-runner-n2"}, h.queues, "and runs there")
	require.False(t, h.turns[1].Resume, "the dead node's conversation cannot be resumed elsewhere")
	require.Equal(t, domain.ContinuePrompt, h.turns[1].Prompt)
}

func TestRecoveryBudgetIsSpentThenAbandoned(t *testing.T) {
	t.Parallel()
	outcomes := make([]turnOutcome, domain.MaxRecoveries+1)
	for i := range outcomes {
		outcomes[i] = turnOutcome{err: lost}
	}
	h := newRecoveryHarness(t, outcomes...)
	h.states = []rw.SessionState{{Status: "running"}}
	h.runFrom(ran(), 1, resumeReq("job-a", "fix the bug"))

	require.Len(t, h.turns, domain.MaxRecoveries+1, "12 recoveries, then no more turns")
	require.Len(t, h.abandoned, 1, "given up once")
	require.Contains(t, h.abandoned[0].Reason, "12 times in a row")
	events := h.events()
	require.Equal(t, rw.EventPause, events[len(events)-1], "it rests, for a human to restart")
	require.Equal(t, "recovery", h.transitions[len(h.transitions)-1].PausedBy)
}

func TestCleanExitRefillsTheRecoveryBudget(t *testing.T) {
	t.Parallel()
	st := ran()
	st.Recoveries = domain.MaxRecoveries - 1
	h := newRecoveryHarness(t, turnOutcome{err: lost}, turnOutcome{result: exited(0)}, turnOutcome{err: lost}, turnOutcome{result: exited(0)})
	h.states = []rw.SessionState{{Status: "running"}}
	h.runFrom(st, 2, resumeReq("job-a", "one"), resumeReq("job-b", "two"))

	require.Empty(t, h.abandoned, "the clean exit between the losses refilled the budget")
	require.Len(t, h.turns, 4)
}

// Rule 13: a turn lost before its runtime began a conversation cannot be
// continued: the session is parked, not replayed at once; the orphan
// sweep's pickup replays the start.
func TestLostFirstTurnBeforeItsConversationIsParkedThenTheSweepReplaysIt(t *testing.T) {
	t.Parallel()
	h := newRecoveryHarness(t, turnOutcome{err: lost}, turnOutcome{result: exited(0)})
	h.states = []rw.SessionState{
		{Status: "running", Prompt: "build it"},                           // when the first turn is lost
		{Status: "needs_input", PausedBy: "recovery", Prompt: "build it"}, // when the sweep picks it up
	}
	h.run(2, first("build it"), rw.TurnRequest{RequestID: "recover/orphan/7/1", Kind: rw.KindRecover,
		Path: domain.PathOrphanSweep, Session: rw.SessionSpec{ID: sessionID}})

	require.Equal(t, []string{rw.EventStart, rw.EventPause, rw.EventResume, rw.EventPause}, h.events(),
		"parked, then resumed by the sweep's replay, whose turn ended")
	require.Equal(t, "recovery", h.transitions[1].PausedBy)
	require.True(t, h.transitions[2].SystemRecovery)
	require.Len(t, h.turns, 2)
	replay := h.turns[1]
	require.Equal(t, "build it", replay.Prompt, "a replayed start runs the first prompt again, not a nudge")
	require.False(t, replay.Resume, "there is no conversation to resume")
	lines := h.lines()
	require.Len(t, lines, 2, "%q", lines)
	require.Equal(t, `[Recovery] The agent's process of turn session-7/turn-1 is no longer running (no heartbeat from node "n1"), `+
		"and its runtime never began a conversation to resume: Zimmer parked the session (needs_input, paused_by: recovery) "+
		"for a human or the orphan sweep to pick up, instead of resuming it at once.", lines[0])
	require.True(t, h.notes[0].Warning, "a parked session waits for someone")
	require.Equal(t, "[Recovery] Turn session-7/turn-1 was lost before its runtime began a conversation (the session had no live turn); "+
		"Zimmer replayed the start: the first prompt runs again in a fresh conversation (replay 1 of 20) as turn session-7/turn-2.", lines[1])
}

// The replays are bounded: the sweep's pickup past the budget fails the
// session naming the cause.
func TestTheSweepsReplaysOfAStartAreBoundedThenTheSessionFails(t *testing.T) {
	t.Parallel()
	st := rw.State{Session: spec, Node: "n1", Workspace: &rw.Workspace{Workdir: "/ws/7"}, Turns: 1, StartReplays: domain.MaxStartReplays - 1}
	h := newRecoveryHarness(t, turnOutcome{err: lost})
	parked := rw.SessionState{Status: "needs_input", PausedBy: "recovery", Prompt: "build it"}
	// Each pickup reads the session twice (the sweep's request, then the
	// decision); the replayed turn's loss once.
	h.states = []rw.SessionState{parked, parked, {Status: "running", Prompt: "build it"}, parked}
	sweep := func(id string) rw.TurnRequest {
		return rw.TurnRequest{RequestID: id, Kind: rw.KindRecover, Path: domain.PathOrphanSweep, Session: rw.SessionSpec{ID: sessionID}}
	}
	h.runFrom(st, 2, sweep("recover/orphan/7/1"), sweep("recover/orphan/7/2"))

	require.Len(t, h.turns, 1, "the last replay of the budget, lost again")
	require.Equal(t, []string{rw.EventResume, rw.EventPause, rw.EventFail}, h.events())
	require.Contains(t, h.transitions[2].FailureReason, "before its runtime began a conversation")
}

// Rule 13: a turn lost whose clone is gone from its node cannot be
// continued there: parked, no queue asked, no turn.
func TestALostTurnWhoseCloneIsGoneIsParked(t *testing.T) {
	t.Parallel()
	h := newRecoveryHarness(t, turnOutcome{err: lost})
	h.cloneGone = true
	h.states = []rw.SessionState{{Status: "running", RunningJobID: "job-a"}}
	h.runFrom(ran(), 1, resumeReq("job-a", "fix the bug"))

	require.Equal(t, []string{rw.EventPause}, h.events())
	require.Equal(t, "recovery", h.transitions[0].PausedBy)
	require.Len(t, h.turns, 1)
	require.Empty(t, h.drains, "nothing can run without the clone")
	require.Equal(t, []string{`[Recovery] The agent's process of turn job-a is no longer running (no heartbeat from node "n1"), ` +
		"and its clone is gone from its runner node: Zimmer parked the session (needs_input, paused_by: recovery) " +
		"for a human or the orphan sweep to pick up, instead of resuming it at once."}, h.lines())
}

// A parked session whose clone stays gone stays parked at each of the
// sweep's pickups, spending the recovery budget, and is then given up.
func TestAParkedSessionWhoseCloneStaysGoneIsGivenUp(t *testing.T) {
	t.Parallel()
	st := ran()
	st.Recoveries = domain.MaxRecoveries - 1
	h := newRecoveryHarness(t)
	h.cloneGone = true
	h.states = []rw.SessionState{{Status: "needs_input", PausedBy: "recovery"}}
	sweep := func(id string) rw.TurnRequest {
		return rw.TurnRequest{RequestID: id, Kind: rw.KindRecover, Path: domain.PathOrphanSweep, Session: rw.SessionSpec{ID: sessionID}}
	}
	h.runFrom(st, 2, sweep("recover/orphan/7/1"), sweep("recover/orphan/7/2"))

	require.Empty(t, h.events(), "it stays where it rests")
	require.Empty(t, h.turns)
	require.Equal(t, []string{"[Recovery] The orphan sweep could not continue the session: its clone is gone from its runner node " +
		"(attempt 12 of 12); it stays parked (paused_by: recovery) for a human or the next sweep."}, h.lines())
	require.Len(t, h.abandoned, 1)
	require.Contains(t, h.abandoned[0].Reason, `clone gone from runner node "n1" 12 times in a row`)
}

func TestRunnerShutdownRetriesTheTurnThreeTimesThenFails(t *testing.T) {
	t.Parallel()
	shut := rw.TurnResult{Shutdown: true, Signal: "SIGTERM", SignalSentByUs: true, StatusKnown: true, ExitCode: -1}
	h := newRecoveryHarness(t, turnOutcome{result: shut}, turnOutcome{result: shut}, turnOutcome{result: shut}, turnOutcome{result: shut})
	h.states = []rw.SessionState{{Status: "running"}}
	h.runFrom(ran(), 1, resumeReq("job-a", "fix the bug"))

	require.Len(t, h.turns, 4)
	require.Contains(t, h.turns[1].Prompt, "Recovery path: runner shutdown")
	require.Empty(t, h.stops, "a shutdown's process was stopped by the runner itself: nothing to prove")
	events := h.events()
	require.Equal(t, rw.EventFail, events[len(events)-1])
	require.Contains(t, h.transitions[len(h.transitions)-1].FailureReason, "shut down during this session's turn 4 times in a row")
}

// Rule 13: a dead agent found (a running session with no live turn) with
// nothing queued is parked for a human or the sweep's next pass, not
// resumed at once.
func TestOrphanSweepParksARunningSessionWithNoTurnAndNothingQueued(t *testing.T) {
	t.Parallel()
	h := newRecoveryHarness(t)
	h.states = []rw.SessionState{{Status: "running", RunningJobID: "job-gone", Spec: spec}}
	st := ran()
	st.Session = rw.SessionSpec{ID: sessionID} // as the sweep starts it
	h.runFrom(st, 1, rw.TurnRequest{RequestID: "recover/orphan/job-gone", Kind: rw.KindRecover, Path: domain.PathOrphanSweep,
		Session: rw.SessionSpec{ID: sessionID}})

	require.Empty(t, h.stops, "nothing of this workflow was running")
	require.Equal(t, []rw.DrainRequest{{SessionID: sessionID, FromJobID: "job-gone"}}, h.drains, "the queue is asked first")
	require.Equal(t, []string{rw.EventPause}, h.events())
	require.Equal(t, "recovery", h.transitions[0].PausedBy)
	require.Empty(t, h.turns)
	require.Equal(t, []string{"[Recovery] The agent's process of turn job-gone is no longer running (the session had no live turn), " +
		"and nothing is queued for it: Zimmer parked the session (needs_input, paused_by: recovery) for a human or the " +
		"orphan sweep to pick up, instead of resuming it at once."}, h.lines())
}

// With messages queued, the dead agent's session takes the first at once
// (it never leaves running); the rest stay pending behind it.
func TestOrphanSweepDeliversTheFirstQueuedMessageToARunningSessionWithNoTurn(t *testing.T) {
	t.Parallel()
	h := newRecoveryHarness(t, turnOutcome{result: exited(0)})
	h.states = []rw.SessionState{{Status: "running", RunningJobID: "job-gone", Spec: spec}}
	h.queue = map[string]rw.HandOver{"job-gone": {Delivered: true, JobID: "queue/m1", Prompt: "the first message"}}
	h.runFrom(ran(), 2, rw.TurnRequest{RequestID: "recover/orphan/job-gone", Kind: rw.KindRecover, Path: domain.PathOrphanSweep,
		Session: rw.SessionSpec{ID: sessionID}})

	require.Equal(t, []string{rw.EventPause}, h.events(), "no park: the message's turn ran, then its end paused")
	require.Len(t, h.turns, 1)
	require.Equal(t, "queue/m1", h.turns[0].TurnID)
	require.Equal(t, "the first message", h.turns[0].Prompt)
	require.Len(t, h.lines(), 1)
	require.Contains(t, h.lines()[0], "the queue's next message runs instead of the recovery nudge, as turn queue/m1")
}

// The sweep's next pass picks a parked session up: recovered with the
// nudge naming its path, the spec read from lifecycle.
func TestOrphanSweepPicksAParkedSessionUpWithTheNudge(t *testing.T) {
	t.Parallel()
	h := newRecoveryHarness(t, turnOutcome{result: exited(0)})
	h.states = []rw.SessionState{{Status: "needs_input", PausedBy: "recovery", Spec: spec}}
	st := ran()
	st.Session = rw.SessionSpec{ID: sessionID} // as the sweep starts it
	h.runFrom(st, 1, rw.TurnRequest{RequestID: "recover/orphan/7/1", Kind: rw.KindRecover, Path: domain.PathOrphanSweep,
		Session: rw.SessionSpec{ID: sessionID}})

	require.Equal(t, []string{rw.EventResume, rw.EventPause}, h.events())
	require.Len(t, h.turns, 1)
	require.Contains(t, h.turns[0].Prompt, "Recovery path: orphan sweep")
	require.Equal(t, "/repo", h.turns[0].Session.GitRoot, "the spec is read from lifecycle")
	require.Equal(t, []string{"[Recovery] Turn session-7/turn-3 was lost (the session had no live turn); Zimmer resumed the " +
		"session with the recovery nudge (path: orphan sweep; recovery 1 of 12) as turn session-7/turn-4."}, h.lines())
}

func TestOrphanSweepRequestLeavesASessionAtRestAlone(t *testing.T) {
	t.Parallel()
	h := newRecoveryHarness(t)
	h.states = []rw.SessionState{{Status: "needs_input", PausedBy: "user"}}
	h.runFrom(ran(), 1, rw.TurnRequest{RequestID: "recover/orphan/7/1", Kind: rw.KindRecover, Path: domain.PathOrphanSweep,
		Session: rw.SessionSpec{ID: sessionID}})

	require.Empty(t, h.events())
	require.Empty(t, h.turns)
}

func TestLostFirstTurnWhoseRuntimeHadBegunIsRecoveredNotReplayed(t *testing.T) {
	t.Parallel()
	begun := temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil,
		rw.TurnProgress{TurnID: "session-7/turn-1", RuntimeSessionID: "conv-9"})
	h := newRecoveryHarness(t, turnOutcome{err: begun}, turnOutcome{result: exited(0)})
	h.states = []rw.SessionState{{Status: "running", Prompt: "build it"}}
	h.run(1, first("build it"))

	require.Len(t, h.turns, 2)
	second := h.turns[1]
	require.True(t, second.Resume, "its last heartbeat said the conversation had begun: resume it")
	require.Equal(t, "conv-9", second.RuntimeSessionID)
	require.Contains(t, second.Prompt, "Recovery path: interrupted turn")
	require.Equal(t, []string{rw.EventStart, rw.EventPause, rw.EventResume, rw.EventPause}, h.events())
	require.Equal(t, []rw.TurnCredentialsRequest{{SessionID: sessionID, TurnID: "session-7/turn-1"}, {SessionID: sessionID, TurnID: h.turns[1].TurnID}},
		h.revocations, "the lost turn's credentials are revoked: nobody holds them on purpose any more")
}
