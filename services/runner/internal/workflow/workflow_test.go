package workflow_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// harness runs the session workflow under the test suite's mocked clock with
// every activity mocked, and records the transitions it asks lifecycle for.
type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment

	mu          sync.Mutex
	transitions []rw.TransitionRequest
	turns       []rw.RunTurnRequest
	drains      []rw.DrainRequest
	// queue answers a drain after the turn named by the key; a turn not in
	// it is followed by nothing.
	queue map[string]rw.HandOver
	// queueErrs fails that many drains before the queue answers; queueErr,
	// when set, fails every one.
	queueErrs int
	queueErr  error
	// queueTakes is how long the queue takes to answer a drain.
	queueTakes  time.Duration
	drainMocked bool
	// prepared is the task queue of each PrepareWorkspace: the node it
	// ran on.
	prepared []string
	// takeOvers is each PrepareWorkspace's TakeOverFrom.
	takeOvers []string
	// revocations are the turns whose credentials were revoked, once each
	// attempt landed; revokeFails fails that many attempts first (lifecycle
	// down), revokeAttempts counts them all.
	revocations    []rw.TurnCredentialsRequest
	revokeFails    int
	revokeAttempts int
	// notes are the lines written on the session's timeline.
	notes []rw.NoteRequest
	// cloneGone: the node answers that the session's clone is not on its
	// disk; cloneAsks counts the questions.
	cloneGone bool
	cloneAsks int
	// lifecycle answers the turn slots (the slot activities run for real
	// over it).
	lifecycle *fakeLifecycle
}

const sessionID = 7

var spec = rw.SessionSpec{ID: sessionID, Runtime: "demo", GitRoot: "/repo", Branch: "main"}

// bareHarness registers the workflow and the activities every test
// shares (timeline notes and the clone-on-disk check, recorded); the rest
// is the test's to mock.
func bareHarness(t *testing.T) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	h := &harness{t: t, env: suite.NewTestWorkflowEnvironment(), lifecycle: &fakeLifecycle{}}
	h.env.RegisterWorkflowWithOptions(rw.Session, workflow.RegisterOptions{Name: rw.WorkflowName})
	acts := &rw.Activities{Lifecycle: h.lifecycle}
	acts.RegisterShared(h.env)
	acts.RegisterNode(h.env)
	h.env.OnActivity(rw.ActivityNoteOnTimeline, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req rw.NoteRequest) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.notes = append(h.notes, req)
			return nil
		}).Maybe()
	h.env.OnActivity(rw.ActivityCloneOnDisk, mock.Anything, mock.Anything).Return(
		func(context.Context, rw.Workspace) (bool, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.cloneAsks++
			return !h.cloneGone, nil
		}).Maybe()
	return h
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := bareHarness(t)
	h.env.OnActivity(rw.ActivityTransition, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req rw.TransitionRequest) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.transitions = append(h.transitions, req)
			return nil
		}).Maybe()
	h.env.OnActivity(rw.ActivityRevokeTurnCredentials, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req rw.TurnCredentialsRequest) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.revokeAttempts++
			if h.revokeFails > 0 {
				h.revokeFails--
				return errors.New("rpc error: code = Unavailable desc = lifecycle is down")
			}
			h.revocations = append(h.revocations, req)
			return nil
		}).Maybe()
	h.env.OnActivity(rw.ActivityPrepareWorkspace, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, req rw.PrepareRequest) (rw.Workspace, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.takeOvers = append(h.takeOvers, req.TakeOverFrom)
			queue := activity.GetInfo(ctx).TaskQueue
			h.prepared = append(h.prepared, queue)
			// The node that made the clone: its own queue's, or n2 for the
			// queue every node polls.
			node := strings.TrimPrefix(queue, "zimmer-runner-")
			if queue == rw.ClonesTaskQueue {
				node = "n2"
			}
			return rw.Workspace{Node: node, Workdir: "/ws/7", StateDir: "/state/7"}, nil
		}).Maybe()
	return h
}

// onTurns answers RunTurn with results, one per call, each after took.
func (h *harness) onTurns(took time.Duration, results ...rw.TurnResult) {
	n := 0
	h.env.OnActivity(rw.ActivityRunTurn, mock.Anything, mock.Anything).After(took).Return(
		func(_ context.Context, req rw.RunTurnRequest) (rw.TurnResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.turns = append(h.turns, req)
			require.Less(h.t, n, len(results), "more turns than the test scripted")
			n++
			return results[n-1], nil
		}).Maybe()
}

// mockDrain answers the drain as the harness's queue says, once the test
// has set it up.
func (h *harness) mockDrain() {
	if h.drainMocked {
		return
	}
	h.drainMocked = true
	h.env.OnActivity(rw.ActivityDrain, mock.Anything, mock.Anything).After(h.queueTakes).Return(
		func(_ context.Context, req rw.DrainRequest) (rw.HandOver, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.drains = append(h.drains, req)
			if h.queueErr != nil {
				return rw.HandOver{}, h.queueErr
			}
			if h.queueErrs > 0 {
				h.queueErrs--
				return rw.HandOver{}, errors.New("queue unavailable")
			}
			return h.queue[req.FromJobID], nil
		}).Maybe()
}

// run signals reqs at the start and runs the workflow until it continues as
// new after turnsPerRun turns.
func (h *harness) run(turnsPerRun int, reqs ...rw.TurnRequest) {
	h.t.Helper()
	h.mockDrain()
	h.env.RegisterDelayedCallback(func() {
		for _, r := range reqs {
			h.env.SignalWorkflow(rw.SignalTurn, r)
		}
	}, 0)
	h.env.ExecuteWorkflow(rw.WorkflowName, rw.State{Node: "n1", TurnsPerRun: turnsPerRun})
	require.True(h.t, h.env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	require.True(h.t, errors.As(h.env.GetWorkflowError(), &can), "want continue-as-new, got %v", h.env.GetWorkflowError())
}

func (h *harness) events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, len(h.transitions))
	for i, tr := range h.transitions {
		out[i] = tr.Event
	}
	return out
}

func first(prompt string) rw.TurnRequest {
	return rw.TurnRequest{RequestID: "ev-1", Kind: rw.KindFirst, Prompt: prompt, Session: spec}
}

func exited(code int, stderr ...string) rw.TurnResult {
	return rw.TurnResult{ExitCode: code, StatusKnown: true, StderrTail: stderr}
}

func killed(sig string) rw.TurnResult {
	return rw.TurnResult{ExitCode: -1, Signal: sig, StatusKnown: true, StderrTail: []string{"bye"}}
}

func TestExitZeroDrainsThenPauses(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Minute, exited(0))
	h.run(1, first("@demo say hi"))

	require.Equal(t, []string{rw.EventStart, rw.EventPause}, h.events())
	require.Equal(t, "session-7/turn-1", h.transitions[0].RunningJobID, "the turn's id is the running job")
	require.Equal(t, int64(sessionID), h.transitions[0].SessionID)
	require.Equal(t, []rw.DrainRequest{{SessionID: sessionID, FromJobID: "session-7/turn-1"}}, h.drains,
		"the queue is drained after the ended turn before the pause")
	require.Len(t, h.turns, 1)
	require.Equal(t, "@demo say hi", h.turns[0].Prompt)
	require.Equal(t, "/ws/7", h.turns[0].Workspace.Workdir)
	require.False(t, h.turns[0].Resume)
	require.NotEmpty(t, h.turns[0].RuntimeSessionID, "the first turn is given the runtime's conversation id")
}

// Each transition the workflow fires carries its own idempotency key,
// drawn from the run and the transition's place in it, so lifecycle can
// answer a retry of one as already applied and never confuse two.
func TestEachTransitionCarriesItsOwnIdempotencyKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Minute, killed("SIGKILL"), exited(0))
	h.run(1, first("@demo say hi"))

	require.Equal(t, []string{rw.EventStart, rw.EventPause, rw.EventResume, rw.EventPause}, h.events())
	keys := make([]string, len(h.transitions))
	for i, tr := range h.transitions {
		keys[i] = tr.IdempotencyKey
	}
	require.Equal(t, []string{
		"default-test-workflow-id/default-test-run-id/turn-1/1-start",
		"default-test-workflow-id/default-test-run-id/turn-1/2-pause",
		"default-test-workflow-id/default-test-run-id/turn-2/3-resume",
		"default-test-workflow-id/default-test-run-id/turn-2/4-pause",
	}, keys)
}

func TestNonZeroExitFailsNamingTheCodeAndStderr(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Second, exited(3, "warming up", "fatal: no such thing"))
	h.run(1, first("@demo exit 3"))

	require.Equal(t, []string{rw.EventStart, rw.EventFail}, h.events())
	reason := h.transitions[1].FailureReason
	require.Contains(t, reason, "exited with code 3")
	require.Contains(t, reason, "fatal: no such thing")
	require.Empty(t, h.drains)
}

func TestSignalDeathIsRecoveredThreeTimesThenFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Second, killed("SIGKILL"), killed("SIGKILL"), killed("SIGKILL"), killed("SIGKILL"))
	h.run(1, first("@demo signal SIGKILL"))

	require.Equal(t, []string{
		rw.EventStart,
		rw.EventPause, rw.EventResume,
		rw.EventPause, rw.EventResume,
		rw.EventPause, rw.EventResume,
		rw.EventFail,
	}, h.events())
	for i, job := range []string{"session-7/turn-2", "session-7/turn-3", "session-7/turn-4"} {
		resume := h.transitions[2+2*i]
		require.True(t, resume.SystemRecovery, "a signal death is resumed as a system recovery")
		require.Equal(t, job, resume.RunningJobID)
	}
	require.Contains(t, h.transitions[7].FailureReason, "SIGKILL")
	require.Contains(t, h.transitions[7].FailureReason, "4 times in a row")
	require.Len(t, h.turns, 4)
	for _, turn := range h.turns[1:] {
		require.True(t, turn.Resume)
		require.Contains(t, turn.Prompt, "@demo signal SIGKILL", "the interrupted turn's prompt is run again")
		require.Contains(t, turn.Prompt, "[Zimmer system recovery]")
	}
	require.Empty(t, h.drains)
}

func TestSignalDeathRecoveredOnceThenPauses(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Second, killed("SIGSEGV"), exited(0))
	h.run(1, first("work"))

	require.Equal(t, []string{rw.EventStart, rw.EventPause, rw.EventResume, rw.EventPause}, h.events())
	require.Len(t, h.drains, 1)
}

func TestSignalSentByZimmerLeavesTheStateToWhoeverStoppedIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	stopped := killed("SIGTERM")
	stopped.SignalSentByUs = true
	h.onTurns(time.Second, stopped)
	h.run(1, first("work"))

	require.Equal(t, []string{rw.EventStart}, h.events())
}

func TestElicitationBlocksThenUnblocks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Minute, exited(0))
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalElicitation, rw.ElicitationSignal{TurnID: "session-7/turn-1", Blocked: true, Message: "ok?"})
	}, 10*time.Second)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalElicitation, rw.ElicitationSignal{TurnID: "session-7/turn-1"})
	}, 20*time.Second)
	h.run(1, first("@demo elicit 10s"))

	require.Equal(t, []string{rw.EventStart, rw.EventBlock, rw.EventUnblock, rw.EventPause}, h.events())
}

func TestProcessEndingWhileBlockedUnblocksBeforeItsEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Minute, exited(2))
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalElicitation, rw.ElicitationSignal{TurnID: "session-7/turn-1", Blocked: true})
	}, 10*time.Second)
	h.env.RegisterDelayedCallback(func() {
		// Another turn's signal changes nothing.
		h.env.SignalWorkflow(rw.SignalElicitation, rw.ElicitationSignal{TurnID: "session-7/turn-9"})
	}, 20*time.Second)
	h.run(1, first("@demo elicit 1h"))

	require.Equal(t, []string{rw.EventStart, rw.EventBlock, rw.EventUnblock, rw.EventFail}, h.events())
}

// The question travels with the block and what became of it with the
// unblock; a process that ends while blocked strands it.
func TestElicitationTransitionsCarryTheQuestionAndItsOutcome(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Minute, exited(0))
	question := &rw.ElicitationInfo{ID: "elicit_demo_1", TurnID: "session-7/turn-1", Message: "ok?"}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalElicitation, rw.ElicitationSignal{TurnID: "session-7/turn-1", Blocked: true, Message: "ok?", Elicitation: question})
	}, 10*time.Second)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalElicitation, rw.ElicitationSignal{TurnID: "session-7/turn-1", Outcome: "expired"})
	}, 20*time.Second)
	h.run(1, first("@demo elicit 10s"))
	require.Equal(t, []string{rw.EventStart, rw.EventBlock, rw.EventUnblock, rw.EventPause}, h.events())
	require.Equal(t, question, h.transitions[1].Elicitation)
	require.Equal(t, "expired", h.transitions[2].ElicitationOutcome)

	h = newHarness(t)
	h.onTurns(time.Minute, exited(2))
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalElicitation, rw.ElicitationSignal{TurnID: "session-7/turn-1", Blocked: true, Elicitation: question})
	}, 10*time.Second)
	h.run(1, first("@demo elicit 1h"))
	require.Equal(t, []string{rw.EventStart, rw.EventBlock, rw.EventUnblock, rw.EventFail}, h.events())
	require.Equal(t, "stranded", h.transitions[2].ElicitationOutcome, "the process ended while its agent waited")
}

// An answer goes to the running turn's node through the update; one for a
// turn that is not running is rejected before anything runs.
func TestAnswerElicitationGoesToTheTurnsNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Minute, exited(0))
	var delivered []rw.AnswerElicitationRequest
	var queues []string
	h.env.OnActivity(rw.ActivityDeliverAnswer, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, req rw.AnswerElicitationRequest) (rw.AnswerElicitationResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			delivered = append(delivered, req)
			queues = append(queues, activity.GetInfo(ctx).TaskQueue)
			return rw.AnswerElicitationResult{Action: req.Action}, nil
		}).Maybe()
	answerAt := func(after time.Duration, req rw.AnswerElicitationRequest) *elicitAnswer {
		a := &elicitAnswer{}
		h.env.RegisterDelayedCallback(func() {
			h.env.UpdateWorkflow(rw.UpdateAnswerElicitation, "", &testsuite.TestUpdateCallback{
				OnReject: func(err error) { a.rejected = err },
				OnComplete: func(res any, err error) {
					a.err = err
					if r, ok := res.(rw.AnswerElicitationResult); ok {
						a.result = r
					}
				},
			}, req)
		}, after)
		return a
	}
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalElicitation, rw.ElicitationSignal{TurnID: "session-7/turn-1", Blocked: true,
			Elicitation: &rw.ElicitationInfo{ID: "elicit_demo_1", TurnID: "session-7/turn-1"}})
	}, 10*time.Second)
	stale := answerAt(15*time.Second, rw.AnswerElicitationRequest{TurnID: "session-7/turn-0", ID: "elicit_demo_1", Action: "cancel"})
	good := answerAt(16*time.Second, rw.AnswerElicitationRequest{TurnID: "session-7/turn-1", ID: "elicit_demo_1", Action: "accept",
		Content: map[string]any{"answer": "yes"}})
	h.run(1, first("@demo elicit 1m"))

	require.Error(t, stale.rejected)
	require.Contains(t, stale.rejected.Error(), "turn session-7/turn-0 is not running any more")
	require.NoError(t, good.rejected)
	require.NoError(t, good.err)
	require.Equal(t, "accept", good.result.Action)
	require.Equal(t, []rw.AnswerElicitationRequest{{TurnID: "session-7/turn-1", ID: "elicit_demo_1", Action: "accept",
		Content: map[string]any{"answer": "yes"}}}, delivered)
	require.Equal(t, []string{rw.NodeTaskQueue("n1")}, queues, "on the node running the turn")
}

type elicitAnswer struct {
	rejected, err error
	result        rw.AnswerElicitationResult
}

func TestCloneFailureFailsTheSessionWithGitsReason(t *testing.T) {
	t.Parallel()
	h := bareHarness(t)
	h.env.OnActivity(rw.ActivityRevokeTurnCredentials, mock.Anything, mock.Anything).Return(nil).Maybe()
	h.env.OnActivity(rw.ActivityTransition, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req rw.TransitionRequest) error {
			h.transitions = append(h.transitions, req)
			return nil
		})
	prepares := 0
	h.env.OnActivity(rw.ActivityPrepareWorkspace, mock.Anything, mock.Anything).Return(
		func(context.Context, rw.PrepareRequest) (rw.Workspace, error) {
			prepares++
			return rw.Workspace{}, temporal.NewNonRetryableApplicationError(
				"git could not clone /nope: repository not found. Check git_root.", rw.ErrPrepareFailed, nil)
		})
	h.run(1, first("hi"))

	require.Equal(t, 1, prepares, "a clone failure that cannot pass by itself is not retried")
	require.Equal(t, []string{rw.EventFail}, h.events(), "failed from waiting: no start, no turn")
	require.Equal(t, "git could not clone /nope: repository not found. Check git_root.", h.transitions[0].FailureReason)
	require.Empty(t, h.turns)
}

func TestRefusedStartRunsNoTurn(t *testing.T) {
	t.Parallel()
	h := bareHarness(t)
	h.env.OnActivity(rw.ActivityRevokeTurnCredentials, mock.Anything, mock.Anything).Return(nil).Maybe()
	h.env.OnActivity(rw.ActivityPrepareWorkspace, mock.Anything, mock.Anything).Return(rw.Workspace{Workdir: "/w"}, nil)
	h.env.OnActivity(rw.ActivityTransition, mock.Anything, mock.Anything).Return(
		temporal.NewNonRetryableApplicationError("lifecycle refused start with the session archived", rw.ErrRefused, nil))
	h.run(1, first("hi"))
	require.Empty(t, h.turns)
}

// A first start refused (a wake was ahead) runs no turn; the first turn
// asked again (the wake fired) starts the session with its prompt.
func TestAFirstTurnAskedAgainAfterARefusedStartRuns(t *testing.T) {
	t.Parallel()
	h := bareHarness(t)
	h.env.OnActivity(rw.ActivityRevokeTurnCredentials, mock.Anything, mock.Anything).Return(nil).Maybe()
	h.env.OnActivity(rw.ActivityPrepareWorkspace, mock.Anything, mock.Anything).Return(rw.Workspace{Workdir: "/w"}, nil)
	h.env.OnActivity(rw.ActivityTransition, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req rw.TransitionRequest) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.transitions = append(h.transitions, req)
			if len(h.transitions) == 1 {
				return temporal.NewNonRetryableApplicationError("lifecycle refused start: a wake-up is ahead", rw.ErrRefused, nil)
			}
			return nil
		})
	h.onTurns(time.Second, exited(0))
	again := first("build it")
	again.RequestID = "ev-9"
	// Asked again later, as a wake fires (at once the first would still be
	// pending, and the second dropped as a duplicate).
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(rw.SignalTurn, again) }, time.Minute)
	h.run(2, first("build it"))

	require.Equal(t, []string{rw.EventStart, rw.EventStart, rw.EventPause}, h.events())
	require.Len(t, h.turns, 1)
	require.Equal(t, "build it", h.turns[0].Prompt)
	require.Equal(t, "session-7/turn-2", h.turns[0].TurnID, "under a turn id of its own")
	require.False(t, h.turns[0].Resume)
}

// A first turn accepted before the session started, queued behind a turn
// that then started it, is dropped when it comes to run: a start from
// waiting would run the first prompt twice.
func TestAFirstTurnThatFindsTheSessionStartedIsDropped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Second, exited(0))
	restart := rw.TurnRequest{RequestID: "ev-2", Kind: rw.KindResume, Session: spec, JobID: "resume/0d5c"}
	h.run(2, restart, first("build it"))

	require.Equal(t, []string{rw.EventPause}, h.events(), "no start after the resume's turn")
	require.Len(t, h.turns, 1)
	require.Equal(t, "resume/0d5c", h.turns[0].TurnID)
}

func TestARedeliveredRequestRunsNoSecondTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Second, exited(0), exited(0))
	restart := rw.TurnRequest{RequestID: "ev-2", Kind: rw.KindResume, Session: spec}
	h.run(2, first("one"), first("one"), restart, restart)

	require.Equal(t, []string{rw.EventStart, rw.EventPause, rw.EventPause}, h.events(),
		"a resume's turn needs no start: lifecycle already moved the session")
	require.Len(t, h.turns, 2)
	require.Equal(t, domain.ContinuePrompt, h.turns[1].Prompt)
	require.True(t, h.turns[1].Resume)
	require.Equal(t, h.turns[0].RuntimeSessionID, h.turns[1].RuntimeSessionID, "one conversation across turns")
}

// A restart's turn runs under the job lifecycle drew for it (the session's
// running_job_id); a recovery of that turn goes back to the workflow's own
// turn ids, which it names to lifecycle as it resumes.
func TestAResumesTurnRunsUnderTheJobLifecycleGaveIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Second, exited(0), killed("SIGKILL"), exited(0))
	restart := rw.TurnRequest{RequestID: "ev-2", Kind: rw.KindResume, Session: spec, JobID: "resume/0d5c"}
	h.run(2, first("one"), restart)

	require.Len(t, h.turns, 3)
	require.Equal(t, "session-7/turn-1", h.turns[0].TurnID)
	require.Equal(t, "resume/0d5c", h.turns[1].TurnID, "the restart's turn is the session's running job")
	require.Equal(t, "session-7/turn-3", h.turns[2].TurnID)
	require.Equal(t, []string{rw.EventStart, rw.EventPause, rw.EventPause, rw.EventResume, rw.EventPause}, h.events())
	require.Equal(t, "session-7/turn-3", h.transitions[3].RunningJobID, "the recovery names its own turn")
}

func TestAnInterruptStopsTheTurnOnlyWhenTheSessionLeftRunning(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		state   rw.SessionState
		stopped bool
	}{
		"paused by a user":         {rw.SessionState{Status: "needs_input"}, true},
		"archived":                 {rw.SessionState{Status: "archived"}, true},
		"blocked on elicitation":   {rw.SessionState{Status: "needs_input", BlockedOnElicitation: true}, false},
		"running again (late one)": {rw.SessionState{Status: "running"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			// What the node reports: a process the ladder stopped, or one
			// that went on to exit 0.
			if tc.stopped {
				stoppedByUs := killed("SIGTERM")
				stoppedByUs.SignalSentByUs = true
				h.onTurns(time.Hour, stoppedByUs)
			} else {
				h.onTurns(time.Hour, exited(0))
			}
			h.env.OnActivity(rw.ActivitySessionState, mock.Anything, mock.Anything).Return(tc.state, nil)
			var stops []string
			h.env.OnActivity(rw.ActivityStopTurn, mock.Anything, mock.Anything).Return(
				func(_ context.Context, turnID string) (string, error) {
					stops = append(stops, turnID)
					return "terminated", nil
				}).Maybe()
			h.env.RegisterDelayedCallback(func() {
				h.env.SignalWorkflow(rw.SignalInterrupt, rw.InterruptRequest{RequestID: "ev-9"})
			}, time.Minute)
			h.run(1, first("@demo sleep 60s"))
			if tc.stopped {
				require.Equal(t, []string{"session-7/turn-1"}, stops, "the turn is stopped on its node")
				require.Equal(t, []string{rw.EventStart}, h.events(), "whoever stopped the turn owns the state")
			} else {
				require.Empty(t, stops)
				require.Equal(t, []string{rw.EventStart, rw.EventPause}, h.events())
			}
		})
	}
}

// interruptAt sends the InterruptTurn update at the mocked time after and
// records its answer and when it came.
func (h *harness) interruptAt(after time.Duration) *updateAnswer {
	return h.interruptTurnAt(after, rw.InterruptTurnRequest{Reason: "pause"})
}

// interruptTurnAt is interruptAt with req.
func (h *harness) interruptTurnAt(after time.Duration, req rw.InterruptTurnRequest) *updateAnswer {
	a := &updateAnswer{}
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(rw.UpdateInterruptTurn, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { a.err = err },
			OnComplete: func(res any, err error) {
				a.done, a.at, a.err = true, h.env.Now(), err
				if r, ok := res.(rw.InterruptTurnResult); ok {
					a.result = r
				}
			},
		}, req)
	}, after)
	return a
}

type updateAnswer struct {
	done   bool
	at     time.Time
	result rw.InterruptTurnResult
	err    error
}

func TestInterruptTurnHaltsTheProcessAndRoutesNoEnd(t *testing.T) {
	t.Parallel()
	for name, res := range map[string]rw.TurnResult{
		// What the node reports once the ladder ran: a death by Zimmer's
		// signal, or an agent that caught SIGTERM and exited 143 or 0:
		// none is routed as a failure or a pause.
		"killed by the ladder":   {ExitCode: -1, Signal: "SIGTERM", SignalSentByUs: true, StatusKnown: true},
		"exited 143 on SIGTERM":  exited(143, "terminated"),
		"exited 0 on SIGTERM":    exited(0),
		"a signal not ours, too": killed("SIGSEGV"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			start := h.env.Now()
			const processLives = time.Hour // until the ladder's end, in mocked time
			h.onTurns(processLives, res)
			var stops []string
			h.env.OnActivity(rw.ActivityStopTurn, mock.Anything, mock.Anything).Return(
				func(_ context.Context, turnID string) (string, error) {
					stops = append(stops, turnID)
					return "terminated", nil
				})
			answer := h.interruptAt(time.Minute)
			// A second call while the first waits: idempotent, same answer.
			again := h.interruptAt(2 * time.Minute)
			h.run(1, first("@demo sleep 60s"))

			require.Equal(t, []string{"session-7/turn-1"}, stops, "the ladder ran once on the turn's node")
			require.Equal(t, []string{rw.EventStart}, h.events(), "the interrupted turn's end is not routed")
			require.Empty(t, h.drains)
			for _, a := range []*updateAnswer{answer, again} {
				require.NoError(t, a.err)
				require.True(t, a.done)
				require.Equal(t, rw.InterruptTurnResult{Interrupted: true, TurnID: "session-7/turn-1", Result: "terminated"}, a.result,
					"with the node's result word")
				require.False(t, a.at.Before(start.Add(processLives)), "answered only once RunTurn returned (the process gone)")
			}
		})
	}
}

// A queue interrupt's caller may lose the answer of a halt that happened
// (its own caller gave up, a gateway died): its retry names the same turn,
// now gone. Until another turn begins it gets the halt's answer again, so
// the queue delivers in the halted turn's place; once the replacement
// runs, a retry naming the old turn halts nothing.
func TestARetriedInterruptOfAHaltedTurnGetsTheHaltsAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const processLives = time.Hour
	h.onTurns(processLives, exited(0, "terminated"), exited(0))
	var stops []string
	h.env.OnActivity(rw.ActivityStopTurn, mock.Anything, mock.Anything).Return(
		func(_ context.Context, turnID string) (string, error) {
			stops = append(stops, turnID)
			return "terminated", nil
		})
	halted := rw.InterruptTurnResult{Interrupted: true, TurnID: "session-7/turn-1", Result: "terminated"}
	queue := rw.InterruptTurnRequest{Reason: "queue interrupt", TurnID: "session-7/turn-1"}
	answer := h.interruptTurnAt(time.Minute, queue)
	retry := h.interruptTurnAt(2*time.Hour, queue) // the turn is gone, nothing else began
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalTurn, rw.TurnRequest{RequestID: "queue/m1", Kind: rw.KindResume, Session: spec,
			JobID: "queue/m1", Prompt: "the message"})
	}, 3*time.Hour)
	stale := h.interruptTurnAt(3*time.Hour+30*time.Minute, queue) // the replacement runs
	h.run(2, first("@demo sleep 60s"))

	for _, a := range []*updateAnswer{answer, retry} {
		require.NoError(t, a.err)
		require.True(t, a.done)
		require.Equal(t, halted, a.result)
	}
	require.NoError(t, stale.err)
	require.True(t, stale.done)
	require.Equal(t, rw.InterruptTurnResult{}, stale.result, "another turn began: nothing halted")
	require.Equal(t, []string{"session-7/turn-1"}, stops, "halted once")
	require.Len(t, h.turns, 2)
	require.Equal(t, "queue/m1", h.turns[1].TurnID, "the replacement ran whole")
	require.Equal(t, []string{rw.EventStart, rw.EventPause}, h.events(), "only the replacement's end is routed")
}

func TestInterruptTurnWithNoTurnRunningAnswersAtOnceAndSparesTheNextTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	start := h.env.Now()
	h.onTurns(time.Minute, exited(0), exited(0))
	h.env.OnActivity(rw.ActivityStopTurn, mock.Anything, mock.Anything).Return(
		func(context.Context, string) (string, error) {
			require.Fail(t, "no turn runs: nothing to stop")
			return "", nil
		}).Maybe()
	answer := h.interruptAt(10 * time.Minute) // idle between turns
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalTurn, rw.TurnRequest{RequestID: "ev-2", Kind: rw.KindResume, Session: spec})
	}, 20*time.Minute)
	h.run(2, first("hello"))

	require.NoError(t, answer.err)
	require.True(t, answer.done)
	require.Equal(t, rw.InterruptTurnResult{}, answer.result)
	require.Equal(t, start.Add(10*time.Minute), answer.at, "answered at once")
	require.Equal(t, []string{rw.EventStart, rw.EventPause, rw.EventPause}, h.events(),
		"the next turn runs and ends normally")
}

// A session created without a prompt gets its clone and waits: no start, no
// agent. Its first message comes as a delivery's resume, which runs a fresh
// conversation with that prompt.
func TestAPromptlessSessionWaitsForItsFirstMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.onTurns(time.Second, exited(0))
	delivery := rw.TurnRequest{RequestID: "ev-2", Kind: rw.KindResume, Session: spec, JobID: "delivery/1", Prompt: "do the thing"}
	h.run(2, first("  "), delivery)

	require.Equal(t, []string{rw.EventPause}, h.events(), "no start: the delivery's resume already moved the session")
	require.Len(t, h.turns, 1)
	require.Equal(t, "delivery/1", h.turns[0].TurnID)
	require.Equal(t, "do the thing", h.turns[0].Prompt)
	require.False(t, h.turns[0].Resume, "the first message starts the conversation")
	require.Equal(t, "/ws/7", h.turns[0].Workspace.Workdir, "in the clone made at creation")
}

// A queue interrupt names the turn it was asked to halt. While that turn's
// process runs it is halted like any other; a call naming another turn (the
// one running began after the interrupt was asked: an earlier interrupt's
// message) halts nothing and marks nothing, and the running turn ends as
// it would have.
func TestInterruptTurnNamingATurnHaltsOnlyThatOne(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		turn   string
		halted bool
	}{
		"the running turn": {turn: "session-7/turn-1", halted: true},
		"another turn":     {turn: "queue/m0"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.onTurns(time.Hour, exited(0))
			var stops []string
			h.env.OnActivity(rw.ActivityStopTurn, mock.Anything, mock.Anything).Return(
				func(_ context.Context, turnID string) (string, error) {
					stops = append(stops, turnID)
					return "terminated", nil
				}).Maybe()
			answer := h.interruptTurnAt(time.Minute, rw.InterruptTurnRequest{Reason: "queue interrupt", TurnID: tc.turn})
			h.run(1, first("@demo sleep 60s"))

			require.NoError(t, answer.err)
			require.True(t, answer.done)
			if tc.halted {
				require.Equal(t, rw.InterruptTurnResult{Interrupted: true, TurnID: tc.turn, Result: "terminated"}, answer.result)
				require.Equal(t, []string{tc.turn}, stops)
				require.Equal(t, []string{rw.EventStart}, h.events(), "the interrupter owns the state")
				return
			}
			require.Equal(t, rw.InterruptTurnResult{}, answer.result)
			require.Empty(t, stops, "nothing halted")
			require.Equal(t, []string{rw.EventStart, rw.EventPause}, h.events(), "the turn ran whole and its end was routed")
		})
	}
}
