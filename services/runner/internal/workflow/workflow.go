package workflow

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/tracing"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// Session is a session's workflow: it runs the turns it is asked for, one at
// a time, and continues as new every TurnsPerRun turns. It never ends on its
// own: a session may be restarted at any time, and an idle workflow costs
// Temporal nothing but a row.
func Session(ctx workflow.Context, st State) error {
	turns := workflow.GetSignalChannel(ctx, SignalTurn)
	elicitations := workflow.GetSignalChannel(ctx, SignalElicitation)
	interrupts := workflow.GetSignalChannel(ctx, SignalInterrupt)
	slots := workflow.GetSignalChannel(ctx, SignalSlot)
	perRun := st.TurnsPerRun
	if perRun <= 0 {
		perRun = DefaultTurnsPerRun
	}
	// active is the turn being run, for the interrupt update's handler and
	// the answer update's validator.
	var active *turnRunner
	err := workflow.SetUpdateHandler(ctx, UpdateInterruptTurn,
		func(ctx workflow.Context, req InterruptTurnRequest) (InterruptTurnResult, error) {
			if h := st.Halted; h != nil && req.TurnID != "" && req.TurnID == h.TurnID {
				return *h, nil // a retry of the interrupt that halted it
			}
			halting := active
			if halting == nil {
				return InterruptTurnResult{}, nil
			}
			r, err := halting.interrupt(ctx, req)
			if err == nil && r.Interrupted && (active == halting || active == nil) {
				// Not once another turn began: it made the halt history.
				st.Halted = &r
			}
			return r, err
		})
	if err != nil {
		return fmt.Errorf("set the %s update handler: %w", UpdateInterruptTurn, err)
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, UpdateAnswerElicitation,
		func(ctx workflow.Context, req AnswerElicitationRequest) (AnswerElicitationResult, error) {
			return deliverAnswer(ctx, st.Node, req)
		},
		workflow.UpdateHandlerOptions{Validator: func(req AnswerElicitationRequest) error {
			// Only the running turn's agent can take an answer; whether it
			// still waits on this question is its node's to say.
			if active == nil || active.process == "" || active.process != req.TurnID {
				return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
					"turn %s is not running any more: its agent cannot take an answer; send the session a message instead", req.TurnID),
					ErrElicitationNotPending, nil)
			}
			return nil
		}})
	if err != nil {
		return fmt.Errorf("set the %s update handler: %w", UpdateAnswerElicitation, err)
	}
	err = workflow.SetQueryHandler(ctx, QueryTurnState, func() (TurnState, error) {
		return TurnState{InFlight: active != nil, Pending: len(st.Pending), Node: st.Node}, nil
	})
	if err != nil {
		return fmt.Errorf("set the %s query handler: %w", QueryTurnState, err)
	}
	if st.SearchAttributes && st.Session.ID != 0 {
		upsertSearch(ctx, SearchSessionID.ValueSet(st.Session.ID), SearchRuntime.ValueSet(st.Session.Runtime))
	}
	for ran := 0; ; {
		receivePending(turns, &st)
		if len(st.Pending) == 0 {
			var req TurnRequest
			turns.Receive(ctx, &req)
			st.accept(req)
			continue
		}
		req := st.Pending[0]
		st.Pending = st.Pending[1:]
		st.Halted = nil // another turn: an interrupt naming the halted one is stale
		active = &turnRunner{st: &st, elicitations: elicitations, interrupts: interrupts, slots: slots}
		// A running session's workflow took this turn from a signal: its
		// activities join the trace of the request that asked for it.
		next, err := active.run(tracing.ContinueInWorkflow(ctx, req.TraceParent, req.TraceState, "Turn", req.Kind), req)
		active = nil
		if err != nil {
			return err
		}
		if next != nil {
			// The queue handed the next turn over: it runs before anything
			// else, and rides along in State.Pending should the run
			// continue as new first.
			st.handOver(*next)
		}
		if ran++; ran >= perRun {
			// An interrupt's answer is sent before the run ends.
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			// Every signal already delivered rides along in State.Pending;
			// none is lost to the new run. A slot's nudge is for a turn no
			// longer waiting: dropped.
			receivePending(turns, &st)
			for slots.ReceiveAsync(nil) {
			}
			return workflow.NewContinueAsNewError(ctx, WorkflowName, st)
		}
	}
}

func receivePending(turns workflow.ReceiveChannel, st *State) {
	for {
		var req TurnRequest
		if !turns.ReceiveAsync(&req) {
			return
		}
		st.accept(req)
	}
}

// accept queues req unless it was seen before, or is a first turn for a
// session whose first turn already ran (a redelivered creation).
func (st *State) accept(req TurnRequest) {
	if req.RequestID != "" {
		if slices.Contains(st.Seen, req.RequestID) {
			return
		}
		st.see(req.RequestID)
	}
	if req.Kind == KindFirst && (st.Started || slices.ContainsFunc(st.Pending, func(p TurnRequest) bool { return p.Kind == KindFirst })) {
		return
	}
	if st.Session.ID == 0 {
		st.Session = req.Session
	}
	st.Pending = append(st.Pending, req)
}

// handOver puts the turn the queue handed over first in line: the session
// is running under its job already. Its request id (the job id) is seen, so
// nothing asks for it twice.
func (st *State) handOver(req TurnRequest) {
	st.see(req.RequestID)
	st.Pending = append([]TurnRequest{req}, st.Pending...)
}

// see remembers a request id, keeping the latest maxSeen.
func (st *State) see(requestID string) {
	st.Seen = append(st.Seen, requestID)
	if len(st.Seen) > maxSeen {
		st.Seen = st.Seen[len(st.Seen)-maxSeen:]
	}
}

// turnRunner runs one requested turn, and the recovery turns a signal death
// calls for.
type turnRunner struct {
	st           *State
	elicitations workflow.ReceiveChannel
	interrupts   workflow.ReceiveChannel
	// slots hears that a slot this turn waited for is its (SignalSlot).
	slots   workflow.ReceiveChannel
	blocked bool
	// slotted: this turn asked for a turn slot (its workflow knows slots),
	// so it gives it back when it ends.
	slotted bool

	// interrupted: InterruptTurn halted this turn on purpose; its end is
	// not routed and no further process is started.
	interrupted bool
	// process is the id of the turn whose RunTurn is in flight, "" between
	// processes; cancelProcess cancels that RunTurn.
	process       string
	cancelProcess workflow.CancelFunc
	stopping      bool
	// stopResult is StopTurn's result word for the process being stopped
	// ("" until it answers, or when it could not).
	stopResult string
	// unparked is the message an unparked turn delivers again: should the
	// turn park again, the message is kept, not the nudge around it.
	unparked string
	// asked is the origin of the requested turn's whole-path latency,
	// handed to its first process only.
	asked Asked
}

// interrupt is the InterruptTurn update: it marks the turn interrupted,
// stops its process by the ladder on its node, and answers once RunTurn has
// returned (the process is gone). Between processes there is nothing to
// stop: the mark keeps the next one from starting.
//
// One naming its turn (req.TurnID: a queue interrupt, which replaces the
// turn with a message) acts only while that turn's process runs. A turn
// still starting, or one that began after the interrupt was asked (an
// earlier interrupt's message), is another message's turn: it is neither
// halted nor marked, and runs whole; the queue makes the interrupt's
// message the next turn instead. So is a turn whose process already ended
// (its end is routed: the queue hands that message over).
func (t *turnRunner) interrupt(ctx workflow.Context, req InterruptTurnRequest) (InterruptTurnResult, error) {
	if req.TurnID != "" && t.process != req.TurnID {
		workflow.GetLogger(ctx).Info("the interrupt's turn is not the one running: nothing halted",
			"turn", req.TurnID, "running", t.process, "reason", req.Reason)
		return InterruptTurnResult{}, nil
	}
	t.interrupted = true
	id := t.process
	if id == "" {
		return InterruptTurnResult{}, nil
	}
	workflow.GetLogger(ctx).Info("interrupting the turn", "turn", id, "reason", req.Reason)
	if !t.stopping {
		t.stopping = true
		t.stopResult = t.stop(ctx, id, t.cancelProcess)
	}
	if err := workflow.Await(ctx, func() bool { return t.process != id }); err != nil {
		return InterruptTurnResult{}, err
	}
	result := t.stopResult
	if result == "" {
		// StopTurn did not answer and the turn's cancellation ended its
		// process: RunTurn has returned, so it is gone.
		result = domain.TerminationTerminated
	}
	return InterruptTurnResult{Interrupted: true, TurnID: id, Result: result}, nil
}

// run runs one requested turn to its end. next is the turn the queue handed
// over at a clean exit, to run at once: the session stays running.
func (t *turnRunner) run(ctx workflow.Context, req TurnRequest) (next *TurnRequest, err error) {
	st := t.st
	switch req.Kind {
	case KindRecover:
		return t.recoverRequested(ctx, req)
	case KindUnpark:
		return t.unpark(ctx, req)
	}
	if req.Kind == KindFirst && st.Started {
		// Accepted before the session started, behind a turn that then
		// started it: a start now (the session may be waiting again)
		// would run its first prompt a second time.
		workflow.GetLogger(ctx).Info("first turn asked for a session already started: dropped", "request", req.RequestID)
		return nil, nil
	}
	if st.Workspace == nil {
		ws, failed, err := t.prepare(ctx)
		if err != nil {
			return nil, err
		}
		if failed != "" {
			return nil, t.endTransition(ctx, TransitionRequest{Event: EventFail, FailureReason: failed})
		}
		st.Workspace = &ws
	}
	if req.Kind == KindFirst && strings.TrimSpace(req.Prompt) == "" {
		// Created without a prompt: the clone is ready and the session
		// waits for its first message, which a delivery resumes it with.
		workflow.GetLogger(ctx).Info("session created without a prompt: clone ready, waiting for its first message")
		return nil, nil
	}
	st.Turns++
	id := turnID(st.Session.ID, st.Turns)
	if req.Kind != KindFirst && req.JobID != "" {
		id = req.JobID // the job lifecycle made the session's running job
	}
	// Before the start, so a first turn waits for its slot in waiting.
	held, err := t.acquireSlot(ctx, id)
	defer t.releaseSlot(ctx, id)
	if err != nil || !held {
		return nil, err
	}
	if req.Kind == KindFirst {
		err := t.transition(ctx, TransitionRequest{Event: EventStart, RunningJobID: id})
		if isRefused(err) {
			// Someone moved the session first (archived, failed): no turn.
			workflow.GetLogger(ctx).Info("session not started: lifecycle refused start", "turn", id, "error", err)
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if st.RuntimeSessionID == "" {
		encoded := workflow.SideEffect(ctx, func(workflow.Context) any { return uuid.NewString() })
		if err := encoded.Get(&st.RuntimeSessionID); err != nil {
			return nil, fmt.Errorf("draw the runtime session id: %w", err)
		}
	}
	prompt, carried := st.withParked(req.Prompt)
	if carried {
		// Someone resumed a parked session (a follow-up, a wake, a
		// restart): the parked message goes first, and the park is over.
		if err := workflow.ExecuteActivity(untilAnswered(ctx), ActivityUnpark, st.Session.ID).Get(ctx, nil); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(prompt) == "" {
		prompt = domain.ContinuePrompt
	}
	t.asked = Asked{Kind: req.Kind, At: req.RequestedAt}
	return t.turns(ctx, id, prompt)
}

// turns runs turn id with prompt, and the recovery turns its loss or a
// death by signal call for, to the end of the last of them. next is the
// turn the queue handed over at a clean exit, to run at once.
func (t *turnRunner) turns(ctx workflow.Context, id, prompt string) (next *TurnRequest, err error) {
	st := t.st
	shutdowns := 0
	for recoveries := 0; ; {
		if t.interrupted {
			workflow.GetLogger(ctx).Info("turn interrupted before its process started", "turn", id)
			return nil, nil
		}
		choice, err := t.chooseAccount(ctx, id)
		if err != nil {
			return nil, err
		}
		if !choice.Run {
			return nil, t.parkOnPool(ctx, id, prompt, ParkRequest{Account: choice.Account, Until: choice.Until, Reason: choice.Reason})
		}
		if err := t.noteAccount(ctx, id, choice.Account); err != nil {
			return nil, err
		}
		result, runErr, err := t.runProcess(ctx, id, prompt)
		if err != nil {
			return nil, err
		}
		if t.blocked {
			// The process is gone: nothing is blocked any more, and its
			// question can never be answered (stranded).
			err := t.endTransition(ctx, TransitionRequest{Event: EventUnblock, ElicitationOutcome: rules.ElicitationStranded})
			if err != nil {
				return nil, err
			}
			t.blocked = false
		}
		if t.interrupted {
			// Halted on purpose (InterruptTurn): however the process ended,
			// the session's next state is the interrupter's.
			return nil, nil
		}
		if temporal.IsCanceledError(runErr) {
			// Stopped because someone else moved the session (interrupt):
			// its state is theirs.
			return nil, nil
		}
		switch {
		case scheduleToStartTimeout(runErr):
			// Its node never took the turn: no process started.
			return nil, t.nodeDead(ctx, id, "the node did not take the turn")
		case temporal.IsTimeoutError(runErr):
			// Lost: the node or its runner died, or Temporal lost the
			// activity. Prove the process gone, then decide (runProcess
			// revoked its credentials).
			st.noteProgress(runErr)
			after, err := t.afterLoss(ctx, id, domain.PathInterruptedTurn, "no heartbeat from node "+strconv.Quote(st.Node), prompt, true)
			if err != nil || after.ends() {
				return after.next, err
			}
			id, prompt = after.id, after.prompt
			continue
		case runErr != nil:
			return nil, t.endTransition(ctx, TransitionRequest{Event: EventFail, FailureReason: notRunReason(runErr)})
		}
		if result.Wall != nil && !result.Shutdown && !result.SignalSentByUs {
			// The login's wall, not the session's error: the turn did
			// nothing, and its prompt waits for the refill.
			return nil, t.parkOnPool(ctx, id, prompt, ParkRequest{Account: st.Account, Wall: result.Wall})
		}
		st.Confirmed = true
		if result.RuntimeSessionID != "" && !result.Shutdown {
			st.RuntimeSessionID = result.RuntimeSessionID
		}
		next, reason := domain.AfterTurn(result.End(), recoveries, shutdowns, st.Node, result.StderrTail)
		switch next {
		case domain.NextRoute:
			st.Recoveries, st.StartReplays = 0, 0
			return t.end(ctx, id, result.ExitedAt)
		case domain.NextLeave:
			// Zimmer stopped it (a pause, an archive): whoever asked owns
			// the session's state.
			return nil, nil
		case domain.NextRetryShutdown:
			shutdowns++
			after, err := t.afterLoss(ctx, id, domain.PathRunnerShutdown, "the runner node "+strconv.Quote(st.Node)+" shut down", prompt, false)
			if err != nil || after.ends() {
				return after.next, err
			}
			id, prompt = after.id, after.prompt
		case domain.NextResumeAfterSignal:
			recoveries++
			if err := t.endTransition(ctx, TransitionRequest{Event: EventPause, PausedBy: domain.PausedByRecovery}); err != nil {
				return nil, err
			}
			if t.interrupted {
				return nil, nil // halted on purpose while between processes
			}
			st.Turns++
			id = turnID(st.Session.ID, st.Turns)
			err := t.transition(ctx, TransitionRequest{Event: EventResume, SystemRecovery: true, RunningJobID: id})
			if isRefused(err) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			prompt = domain.AfterSignalDeath(prompt, result.Signal)
		default: // domain.NextFail
			return nil, t.endTransition(ctx, TransitionRequest{Event: EventFail, FailureReason: reason})
		}
	}
}

// end routes a clean exit of turn id at exitedAt: the queue may hand the
// next turn over (the session stays running, no transition at all), timed
// from that exit; else the turn pauses.
func (t *turnRunner) end(ctx workflow.Context, id string, exitedAt time.Time) (*TurnRequest, error) {
	h, err := t.drain(ctx, id)
	if err != nil {
		return nil, err
	}
	if t.interrupted {
		// InterruptTurn came while the queue answered: it found no process,
		// and its caller now owns the session's next state, so no process
		// may start after it (and a pause of ours could undo its doing).
		if h.Delivered {
			workflow.GetLogger(ctx).Warn("the queue handed a turn over while the turn was being interrupted: not run",
				"turn", id, "handed_over", h.JobID)
		}
		return nil, nil
	}
	if h.Delivered {
		workflow.GetLogger(ctx).Info("the queue handed the next turn over", "turn", id, "next", h.JobID)
		return &TurnRequest{RequestID: h.JobID, Kind: KindHandOver, JobID: h.JobID, Prompt: h.Prompt, Session: t.st.Session,
			RequestedAt: exitedAt}, nil
	}
	return nil, t.endTransition(ctx, TransitionRequest{Event: EventPause})
}

// prepare makes the clone on the session's node. failed is the session's
// failure_reason when the clone cannot be made.
func (t *turnRunner) prepare(ctx workflow.Context) (ws Workspace, failed string, err error) {
	queue := NodeTaskQueue(t.st.Node)
	if t.st.Node == "" {
		queue = ClonesTaskQueue // any live node may make it, and then holds it
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              queue,
		ScheduleToStartTimeout: t.st.nodeDeadAfter(),
		StartToCloseTimeout:    prepareTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5,
			NonRetryableErrorTypes: []string{ErrPrepareFailed},
		},
	})
	err = workflow.ExecuteActivity(actx, ActivityPrepareWorkspace,
		PrepareRequest{Session: t.st.Session, TakeOverFrom: t.st.LostNode}).Get(ctx, &ws)
	var appErr *temporal.ApplicationError
	switch {
	case err == nil:
		if ws.Node != "" && ws.Node != t.st.Node {
			t.st.Node, t.st.LostNode = ws.Node, ""
			upsertMemo(ctx, map[string]any{"node": ws.Node})
		}
		return ws, "", nil
	case errors.As(err, &appErr) && appErr.Type() == ErrPrepareFailed:
		return Workspace{}, appErr.Message(), nil
	case temporal.IsCanceledError(err):
		return Workspace{}, "", err
	default:
		return Workspace{}, domain.PrepareGaveUpReason(rootMessage(err)), nil
	}
}

// runProcess runs one agent process and follows its elicitations while it
// lives. runErr is the turn's own failure (it could not start, or the node
// lost it); err is the workflow's (a transition that cannot be made).
func (t *turnRunner) runProcess(ctx workflow.Context, id, prompt string) (result TurnResult, runErr, err error) {
	st := t.st
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: NodeTaskQueue(st.Node),
		// A node that never takes the turn is dead: no process started.
		ScheduleToStartTimeout: st.nodeDeadAfter(),
		StartToCloseTimeout:    turnMaxDuration,
		HeartbeatTimeout:       turnHeartbeatTimeout,
		WaitForCancellation:    true,
		// Never re-run by Temporal: a second process could repeat the first
		// one's side effects. A lost turn is the workflow's to decide.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	upsertMemo(ctx, map[string]any{"turn": id, "runtime": st.Session.Runtime})
	actx, cancelTurn := workflow.WithCancel(actx)
	defer cancelTurn()
	fut := workflow.ExecuteActivity(actx, ActivityRunTurn, RunTurnRequest{
		Session: st.Session, TurnID: id, Prompt: prompt, Workspace: *st.Workspace,
		RuntimeSessionID: st.RuntimeSessionID, Resume: st.Started, Account: st.Account,
		Asked: t.asked,
	})
	t.asked = Asked{} // a recovery's process is not the request's start
	st.Started = true
	t.process, t.cancelProcess, t.stopping, t.stopResult = id, cancelTurn, false, ""
	defer func() { t.process, t.cancelProcess = "", nil }()
	done := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(fut, func(f workflow.Future) {
		runErr, done = f.Get(ctx, &result), true
		t.process = "" // an interrupt waiting for the process answers now
	})
	sel.AddReceive(t.elicitations, func(c workflow.ReceiveChannel, _ bool) {
		var s ElicitationSignal
		c.Receive(ctx, &s)
		if err == nil {
			err = t.elicitation(ctx, id, s)
		}
	})
	sel.AddReceive(t.interrupts, func(c workflow.ReceiveChannel, _ bool) {
		var r InterruptRequest
		c.Receive(ctx, &r)
		if err == nil && !done {
			var stop bool
			if stop, err = t.leftRunning(ctx); stop {
				workflow.GetLogger(ctx).Info("the session left running: stopping its turn", "turn", id, "request", r.RequestID)
				t.stop(ctx, id, cancelTurn)
			}
		}
	})
	for !done && err == nil {
		sel.Select(ctx)
	}
	if done {
		t.revokeTurn(ctx, id)
	}
	if err != nil {
		return result, nil, err
	}
	// Signals the activity sent before it completed are all in the history
	// by now; follow them in order.
	for {
		var s ElicitationSignal
		if !t.elicitations.ReceiveAsync(&s) {
			break
		}
		if err := t.elicitation(ctx, id, s); err != nil {
			return result, nil, err
		}
	}
	return result, runErr, nil
}

// stop ends the turn's process on its node at once (StopTurn) and answers
// its result word; should the node not answer, cancelling RunTurn stops it
// at its next heartbeat, and the answer is "".
func (t *turnRunner) stop(ctx workflow.Context, id string, cancelTurn workflow.CancelFunc) string {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              NodeTaskQueue(t.st.Node),
		ScheduleToCloseTimeout: time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var result string
	if err := workflow.ExecuteActivity(actx, ActivityStopTurn, id).Get(ctx, &result); err != nil {
		workflow.GetLogger(ctx).Warn("stop the turn on its node; cancelling it instead", "turn", id, "error", err)
		cancelTurn()
		return ""
	}
	return result
}

// leftRunning reads the session and reports whether it left running by
// someone else's hand (domain.SessionState.LeftRunning).
func (t *turnRunner) leftRunning(ctx workflow.Context) (bool, error) {
	s, err := t.sessionState(ctx)
	if err != nil {
		return false, err
	}
	return s.LeftRunning(), nil
}

func (t *turnRunner) elicitation(ctx workflow.Context, id string, s ElicitationSignal) error {
	if s.TurnID != id || s.Blocked == t.blocked {
		return nil // another turn's, or no change
	}
	req := TransitionRequest{Event: EventUnblock, ElicitationOutcome: s.Outcome}
	if s.Blocked {
		req = TransitionRequest{Event: EventBlock, Elicitation: s.Elicitation}
	}
	if err := t.endTransition(ctx, req); err != nil {
		return err
	}
	t.blocked = s.Blocked
	return nil
}

// drain asks the queue for the turn that follows turn id, as a local
// activity, until the queue answers: a hand-over is idempotent per turn, so
// asking again after an error never hands two over. An answer retrying
// cannot change (ErrDrainRefused) hands nothing over.
func (t *turnRunner) drain(ctx workflow.Context, id string) (HandOver, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    drainAttemptTimeout,
		ScheduleToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{ErrDrainRefused},
		},
	})
	req := DrainRequest{SessionID: t.st.Session.ID, FromJobID: id}
	for {
		var h HandOver
		err := workflow.ExecuteLocalActivity(lctx, ActivityDrain, req).Get(ctx, &h)
		var appErr *temporal.ApplicationError
		switch {
		case err == nil:
			return h, nil
		case errors.As(err, &appErr) && appErr.Type() == ErrDrainRefused:
			workflow.GetLogger(ctx).Error("the queue refused the turn-end drain: pausing", "turn", id, "error", err)
			return HandOver{}, nil
		case temporal.IsCanceledError(err):
			return HandOver{}, err
		}
		// Five minutes of retries did not reach the queue: keep asking.
		workflow.GetLogger(ctx).Warn("the queue did not answer the turn-end drain; asking again", "turn", id, "error", err)
	}
}

// untilAnswered runs an activity on the shared queue, retried until the
// service it calls answers (each attempt bounded by transitionTimeout).
func untilAnswered(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           TaskQueue,
		StartToCloseTimeout: transitionTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
}

// transition fires one lifecycle event, retried until lifecycle answers.
// It runs as a local activity, in the workflow task that asks for it: a
// start then costs no dispatch before RunTurn is scheduled, and a pause
// none after the drain. Each carries its own idempotency key, so a retry
// of a call that had applied — the activity's next attempt, or the
// workflow task run again by another worker after this one died — is
// answered as already applied by lifecycle itself.
func (t *turnRunner) transition(ctx workflow.Context, req TransitionRequest) error {
	req.SessionID = t.st.Session.ID
	req.IdempotencyKey = t.st.idempotencyKey(ctx, req.Event)
	err := askLocally(ctx, ActivityTransition, req, ErrRefused)
	if err == nil {
		upsertMemo(ctx, map[string]any{"last_event": req.Event})
		if t.st.SearchAttributes {
			upsertSearch(ctx, SearchStatus.ValueSet(domain.Arrival(req.Event)))
		}
	}
	return err
}

// idempotencyKey names the next transition this run fires: the workflow's
// id and run id, the session's turn count, and the transition's place in
// the run. Replay computes the same key for the same call, and no other
// call gets it.
func (st *State) idempotencyKey(ctx workflow.Context, event string) string {
	st.fired++
	info := workflow.GetInfo(ctx).WorkflowExecution
	return fmt.Sprintf("%s/%s/turn-%d/%d-%s", info.ID, info.RunID, st.Turns, st.fired, event)
}

// askLocally runs a short, idempotent call to another service as a local
// activity, in the workflow task at hand (no dispatch), asked again after
// every five minutes without an answer, as the drain is: a local
// activity's retries are bounded by its schedule-to-close timeout. An
// answer, a refusal (nonRetryable) or the workflow's cancellation ends it.
func askLocally(ctx workflow.Context, activity string, req any, nonRetryable string) error {
	return askLocallyFor(ctx, activity, req, nonRetryable, nil)
}

// askLocallyFor is askLocally for a call that answers: its answer is
// decoded into result (nil: none).
func askLocallyFor(ctx workflow.Context, activity string, req any, nonRetryable string, result any) error {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    transitionTimeout,
		ScheduleToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{nonRetryable},
		},
	})
	for {
		err := workflow.ExecuteLocalActivity(lctx, activity, req).Get(ctx, result)
		var appErr *temporal.ApplicationError
		if err == nil || ctx.Err() != nil || temporal.IsCanceledError(err) ||
			(errors.As(err, &appErr) && appErr.Type() == nonRetryable) {
			return err
		}
		workflow.GetLogger(ctx).Warn("no answer in five minutes; asking again", "activity", activity, "error", err)
	}
}

// endTransition is a transition after which a refusal means someone else
// already moved the session (archived it mid-turn, say): nothing to do.
func (t *turnRunner) endTransition(ctx workflow.Context, req TransitionRequest) error {
	err := t.transition(ctx, req)
	if isRefused(err) {
		workflow.GetLogger(ctx).Info("lifecycle refused a turn-end transition; the session moved on",
			"event", req.Event, "error", err)
		return nil
	}
	return err
}

func upsertMemo(ctx workflow.Context, memo map[string]any) {
	if err := workflow.UpsertMemo(ctx, memo); err != nil {
		workflow.GetLogger(ctx).Warn("upsert memo", "error", err)
	}
}

func upsertSearch(ctx workflow.Context, updates ...temporal.SearchAttributeUpdate) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		workflow.GetLogger(ctx).Warn("upsert search attributes", "error", err)
	}
}

func isRefused(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == ErrRefused
}

// rootMessage is the innermost error's message: Temporal wraps an activity's
// error in "activity error (…)".
func rootMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
		err = u
	}
	return err.Error()
}

// notRunReason is the failure reason of a turn whose RunTurn failed.
func notRunReason(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == ErrTurnNotStarted {
		return domain.NotStartedReason(appErr.Message())
	}
	if temporal.IsTimeoutError(err) {
		return domain.LostProcessReason(rootMessage(err))
	}
	return domain.TurnFailedReason(rootMessage(err))
}

// deliverAnswer is the answer_elicitation update: the answer goes to the
// node running the turn (its own task queue), which writes it on the
// agent's stdin and returns what the agent did with it. Never retried: the
// agent takes one answer, and a second attempt could only be refused.
func deliverAnswer(ctx workflow.Context, node string, req AnswerElicitationRequest) (AnswerElicitationResult, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: NodeTaskQueue(node),
		// A node that does not take it within this is not running the
		// agent any more (or not at all).
		ScheduleToStartTimeout: answerScheduleTimeout,
		StartToCloseTimeout:    answerTimeout,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var res AnswerElicitationResult
	err := workflow.ExecuteActivity(actx, ActivityDeliverAnswer, req).Get(ctx, &res)
	var appErr *temporal.ApplicationError
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &appErr) && appErr.Type() == ErrElicitationNotPending:
		return res, temporal.NewNonRetryableApplicationError(appErr.Message(), ErrElicitationNotPending, nil)
	case temporal.IsTimeoutError(err):
		return res, fmt.Errorf("runner node %s did not hand the agent the answer in time; retry shortly: %w", node, err)
	}
	return res, err
}

// The bounds of one answer's delivery: the node taking it, and writing it
// and hearing what the agent did (the agent's own wait, answerAckTimeout,
// is inside it).
const (
	answerScheduleTimeout = 15 * time.Second
	answerTimeout         = 30 * time.Second
)

// versionTurnSlots marks the histories whose turns ask for a turn slot:
// those started before the slots replay without the calls.
const versionTurnSlots = "turn-slots"

// slotRecheck is how often a turn waiting for a slot asks again without
// being told (SignalSlot): the backstop for a nudge lost, a limit raised
// or a slot taken back.
const slotRecheck = 5 * time.Second

// acquireSlot holds turn id back until its session holds one of the
// fleet's turn slots (LC-36, RN-35): at once when one is free and the
// line's order gives it, or when a release or the spot scheduler gives it
// one (SignalSlot, or the look it takes every slotRecheck). Nothing else
// is held while it waits: no process, no credential, no clone being made.
// held is false when the turn must not run: it was interrupted while it
// waited, or lifecycle gives the session no slot (it failed or was
// archived meanwhile).
func (t *turnRunner) acquireSlot(ctx workflow.Context, id string) (held bool, err error) {
	if workflow.GetVersion(ctx, versionTurnSlots, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return true, nil
	}
	t.slotted = true
	req := SlotRequest{SessionID: t.st.Session.ID, TurnID: id, Node: t.st.Node}
	for waited := false; ; waited = true {
		if t.interrupted {
			workflow.GetLogger(ctx).Info("turn interrupted while it waited for a turn slot", "turn", id)
			return false, nil
		}
		var ans SlotAnswer
		err := askLocallyFor(ctx, ActivityAcquireSlot, req, ErrSlotRefused, &ans)
		var appErr *temporal.ApplicationError
		switch {
		case errors.As(err, &appErr) && appErr.Type() == ErrSlotRefused:
			workflow.GetLogger(ctx).Info("no turn slot for the session: the turn does not run", "turn", id, "error", err)
			return false, nil
		case err != nil:
			return false, err
		case ans.Granted:
			if waited {
				upsertMemo(ctx, map[string]any{"slot_wait": 0})
			}
			return true, nil
		}
		upsertMemo(ctx, map[string]any{"slot_wait": ans.Position})
		wctx, stopTimer := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(wctx, slotRecheck), func(workflow.Future) {})
		sel.AddReceive(t.slots, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.Select(ctx)
		stopTimer()
	}
}

// releaseSlot gives the session's turn slot back once turn id ended
// (and takes it out of the line if it still waited), however the turn
// ended: a workflow being cancelled gives it back too. Should lifecycle
// never answer, the scheduler takes an abandoned slot back itself
// (domain.SlotGrace).
func (t *turnRunner) releaseSlot(ctx workflow.Context, id string) {
	if !t.slotted {
		return
	}
	t.slotted = false
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if err := askLocally(dctx, ActivityReleaseSlot, SlotRequest{SessionID: t.st.Session.ID, TurnID: id}, ErrSlotRefused); err != nil {
		workflow.GetLogger(ctx).Warn("give the turn slot back; the scheduler takes it back itself", "turn", id, "error", err)
	}
}
