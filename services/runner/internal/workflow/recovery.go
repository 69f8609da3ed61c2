package workflow

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// step is what follows a lost turn: nothing (stop), the turn the queue
// handed over (next), or a recovery turn under id with prompt.
type step struct {
	stop       bool
	next       *TurnRequest
	id, prompt string
}

var stop = step{stop: true}

// ends reports whether the lost turn's handling ends here: nothing runs,
// or the handed-over turn (next) runs instead.
func (s step) ends() bool { return s.stop || s.next != nil }

// afterLoss carries out what follows the loss of turn lostID (the process
// is proven gone when prove is false, or proven here): domain.PlanLoss
// decides on the session as lifecycle has it now, whether the clone is
// still on its node and the budgets spent, and this makes it so — nothing,
// a park, a failure, an abandoned recovery, the queue's next message, or a
// recovery turn — and says on the session's timeline what it decided and
// why, in one line. prompt is the lost turn's, which a replayed start runs
// again ("" reads the session's own).
func (t *turnRunner) afterLoss(ctx workflow.Context, lostID, path, cause, prompt string, prove bool) (step, error) {
	st := t.st
	log := workflow.GetLogger(ctx)
	if prove {
		dead, err := t.proveGone(ctx, lostID)
		if err != nil {
			return stop, err
		}
		if dead {
			return stop, t.nodeDead(ctx, lostID, cause)
		}
	}
	if t.interrupted {
		return stop, nil // halted on purpose meanwhile: the interrupter decides
	}
	s, err := t.sessionState(ctx)
	if err != nil {
		return stop, err
	}
	if st.Session.GitRoot == "" && s.Spec.ID != 0 {
		st.Session = s.Spec // a workflow the orphan sweep started knows only the id
	}
	loss := domain.Loss{Path: path, Confirmed: st.Confirmed}
	plan := domain.PlanLoss(s, loss, st.Recoveries, st.StartReplays)
	if plan.NeedsTheClone() && st.Workspace != nil {
		// A turn runs only in its clone: one gone from the node parks the
		// session instead.
		onDisk, dead := t.cloneOnDisk(ctx)
		if dead {
			return stop, t.nodeDead(ctx, lostID, cause)
		}
		if !onDisk {
			loss.CloneGone = true
			plan = domain.PlanLoss(s, loss, st.Recoveries, st.StartReplays)
		}
	}
	log.Info("a turn was lost", "turn", lostID, "path", path, "cause", cause, "status", s.Status,
		"paused_by", s.PausedBy, "decision", plan.Decision.String(), "row", plan.Row.Session, "exhausted", plan.Exhausted)
	var line func(next string) string
	switch {
	case plan.Decision == domain.StandDown:
		return stop, t.note(ctx, domain.StoodDownLine(lostID, cause, plan.Row), false)
	case plan.Decision == domain.Park && plan.Exhausted:
		return stop, t.abandon(ctx, plan, domain.CloneGoneReason(st.Recoveries, st.Node))
	case plan.Decision == domain.Park:
		return t.park(ctx, lostID, cause, prompt, plan)
	case plan.Decision == domain.ReplayStart && plan.Exhausted:
		return stop, t.endTransition(ctx, TransitionRequest{Event: EventFail,
			FailureReason: domain.StartReplaysReason(st.StartReplays, cause, st.Node)})
	case plan.Decision == domain.ReplayStart:
		st.StartReplays++
		st.Started = false // nothing to resume: the runtime starts afresh
		if prompt == "" {
			prompt = st.ParkedPrompt
		}
		if prompt == "" {
			prompt = s.Prompt
		}
		st.ParkedPrompt = ""
		line = func(next string) string { return domain.ReplayedLine(lostID, cause, next, st.StartReplays) }
	case plan.Exhausted: // domain.Recover
		return stop, t.abandon(ctx, plan, domain.RecoveriesReason(st.Recoveries, path, cause))
	default: // domain.Recover
		st.Recoveries++
		prompt = domain.RecoveryNudge(path, cause)
		line = func(next string) string { return domain.NudgedLine(lostID, path, cause, next, st.Recoveries) }
	}
	if plan.DrainFirst {
		next, err := t.handOverInstead(ctx, lostID, cause)
		if err != nil || next.ends() {
			return next, err
		}
	}
	if plan.Park {
		if err := t.transition(ctx, TransitionRequest{Event: EventPause, PausedBy: domain.PausedByRecovery}); err != nil {
			return stop, refusedIsNothing(ctx, err)
		}
		if t.interrupted {
			return stop, nil
		}
	}
	if st.Workspace == nil {
		ws, failed, err := t.prepare(ctx)
		if err != nil {
			return stop, err
		}
		if failed != "" {
			return stop, t.endTransition(ctx, TransitionRequest{Event: EventFail, FailureReason: failed})
		}
		st.Workspace = &ws
	}
	st.Turns++
	id := turnID(st.Session.ID, st.Turns)
	if err := t.transition(ctx, TransitionRequest{Event: EventResume, SystemRecovery: true, RunningJobID: id}); err != nil {
		return stop, refusedIsNothing(ctx, err)
	}
	if err := t.note(ctx, line(id), false); err != nil {
		return stop, err
	}
	return step{id: id, prompt: prompt}, nil
}

// handOverInstead asks the queue for its next message, which runs instead
// of whatever the recovery would have done: someone has taken the session
// over. The rest of the queue stays pending behind it. Nothing queued is
// a step that does not end.
func (t *turnRunner) handOverInstead(ctx workflow.Context, lostID, cause string) (step, error) {
	h, err := t.drain(ctx, lostID)
	if err != nil {
		return stop, err
	}
	if t.interrupted {
		return stop, nil
	}
	if !h.Delivered {
		return step{}, nil
	}
	workflow.GetLogger(ctx).Info("the queue handed its next message over instead of the recovery", "lost", lostID, "next", h.JobID)
	if err := t.note(ctx, domain.HandedOverLine(lostID, cause, h.JobID), false); err != nil {
		return stop, err
	}
	return step{next: &TurnRequest{RequestID: h.JobID, Kind: KindHandOver, JobID: h.JobID, Prompt: h.Prompt, Session: t.st.Session}}, nil
}

// park leaves a session its recovery cannot continue (plan.Cannot) in
// needs_input with paused_by: recovery, for a human or the orphan sweep to
// pick up — after the queue's next message, when the plan asks it first.
// A session parked already stays so, spending its recovery budget.
func (t *turnRunner) park(ctx workflow.Context, lostID, cause, prompt string, plan domain.LossPlan) (step, error) {
	st := t.st
	if plan.DrainFirst {
		next, err := t.handOverInstead(ctx, lostID, cause)
		if err != nil || next.ends() {
			return next, err
		}
	}
	if plan.Cannot == domain.CannotNoConversation {
		// Whatever runs next starts the runtime afresh; the sweep's replay
		// runs this prompt again.
		st.Started, st.ParkedPrompt = false, prompt
	}
	if !plan.Park {
		st.Recoveries++
		return stop, t.note(ctx, domain.StillParkedLine(plan.Cannot, st.Recoveries), true)
	}
	if err := t.transition(ctx, TransitionRequest{Event: EventPause, PausedBy: domain.PausedByRecovery}); err != nil {
		return stop, refusedIsNothing(ctx, err)
	}
	return stop, t.note(ctx, domain.ParkedLine(lostID, cause, plan.Cannot), true)
}

// note writes line on the session's timeline, as a local activity, under a
// note id drawn once (a retry writes nothing twice). A note lifecycle
// refuses is logged and skipped: the decision it tells stands.
func (t *turnRunner) note(ctx workflow.Context, line string, warning bool) error {
	var id string
	encoded := workflow.SideEffect(ctx, func(workflow.Context) any { return uuid.NewString() })
	if err := encoded.Get(&id); err != nil {
		return fmt.Errorf("draw the timeline note's id: %w", err)
	}
	err := askLocally(ctx, ActivityNoteOnTimeline, NoteRequest{SessionID: t.st.Session.ID, NoteID: id, Message: line, Warning: warning}, ErrNoteRefused)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == ErrNoteRefused {
		workflow.GetLogger(ctx).Error("lifecycle refused a recovery line", "line", line, "error", err)
		return nil
	}
	return err
}

// cloneOnDisk asks the session's node whether its clone is still there.
// dead: the node left the question unserved for NodeDeadAfter. A node that
// cannot tell counts as having it: the turn then finds out.
func (t *turnRunner) cloneOnDisk(ctx workflow.Context) (onDisk, dead bool) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              NodeTaskQueue(t.st.Node),
		ScheduleToStartTimeout: t.st.nodeDeadAfter(),
		StartToCloseTimeout:    30 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	err := workflow.ExecuteActivity(actx, ActivityCloneOnDisk, *t.st.Workspace).Get(ctx, &onDisk)
	switch {
	case err == nil:
		return onDisk, false
	case scheduleToStartTimeout(err):
		return false, true
	}
	workflow.GetLogger(ctx).Warn("the node could not say whether the clone is on its disk", "node", t.st.Node, "error", err)
	return true, false
}

// recoverRequested is the orphan sweep's request: the session showed no
// live turn. This workflow runs one turn at a time, so none is live now;
// the table decides on the session as it stands.
func (t *turnRunner) recoverRequested(ctx workflow.Context, req TurnRequest) (*TurnRequest, error) {
	s, err := t.sessionState(ctx)
	if err != nil {
		return nil, err
	}
	if s.RunningJobID != "" && slices.ContainsFunc(t.st.Pending, func(p TurnRequest) bool { return p.JobID == s.RunningJobID }) {
		// The turn lifecycle made the session's running job is on its way.
		return nil, nil
	}
	lost := s.RunningJobID
	if lost == "" {
		lost = turnID(t.st.Session.ID, t.st.Turns)
	}
	next, err := t.afterLoss(ctx, lost, req.Path, "the session had no live turn", "", false)
	if err != nil || next.stop {
		return nil, err
	}
	if next.next != nil {
		return next.next, nil
	}
	held, err := t.acquireSlot(ctx, next.id)
	defer t.releaseSlot(ctx, next.id)
	if err != nil || !held {
		return nil, err
	}
	return t.turns(ctx, next.id, next.prompt)
}

// proveGone makes sure no process of turn id is left, by StopTurn on the
// node's own task queue: only a live incarnation of the node serves it, and
// a restarted node kills what its predecessor left before it serves it.
// dead: the node left it unserved for NodeDeadAfter.
func (t *turnRunner) proveGone(ctx workflow.Context, id string) (dead bool, err error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              NodeTaskQueue(t.st.Node),
		ScheduleToStartTimeout: t.st.nodeDeadAfter(),
		StartToCloseTimeout:    time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	for attempt := 1; ; attempt++ {
		err := workflow.ExecuteActivity(actx, ActivityStopTurn, id).Get(ctx, new(string))
		switch {
		case err == nil:
			return false, nil
		case scheduleToStartTimeout(err):
			return true, nil
		case temporal.IsCanceledError(err):
			return false, err
		case attempt >= maxStopAttempts:
			return false, t.endTransition(ctx, TransitionRequest{Event: EventFail,
				FailureReason: domain.StopFailedReason(t.st.Node, id, rootMessage(err))})
		}
		workflow.GetLogger(ctx).Warn("stop a lost turn's process; asking again", "turn", id, "error", err)
		if err := workflow.Sleep(ctx, 10*time.Second); err != nil {
			return false, err
		}
	}
}

// maxStopAttempts bounds asking a live node to stop a lost turn.
const maxStopAttempts = 30

func scheduleToStartTimeout(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START
}

// nodeDead fails the session naming its node, and forgets the node: a
// restart makes the clone anew on the node that receives it.
func (t *turnRunner) nodeDead(ctx workflow.Context, lostID, cause string) error {
	st := t.st
	node := st.Node
	reason := domain.NodeDeadReason(node, lostID, cause, st.nodeDeadAfter(), st.Session.GitRoot)
	st.LostNode = node
	st.Node, st.Workspace, st.Started, st.Confirmed, st.RuntimeSessionID = "", nil, false, false, ""
	upsertMemo(ctx, map[string]any{"node": ""})
	return t.endTransition(ctx, TransitionRequest{Event: EventFail, FailureReason: reason})
}

// abandon gives up recovering: lifecycle drops the recovery marker and
// records why, and the session rests where it is for a human.
func (t *turnRunner) abandon(ctx workflow.Context, plan domain.LossPlan, reason string) error {
	workflow.GetLogger(ctx).Error("recovery abandoned", "session_id", t.st.Session.ID, "reason", reason)
	if plan.Park {
		if err := t.transition(ctx, TransitionRequest{Event: EventPause, PausedBy: domain.PausedByRecovery}); err != nil {
			return refusedIsNothing(ctx, err)
		}
	}
	actx := untilAnswered(ctx)
	t.st.Recoveries = 0
	return workflow.ExecuteActivity(actx, ActivityAbandonRecovery, AbandonRequest{SessionID: t.st.Session.ID, Reason: reason}).Get(ctx, nil)
}

func (t *turnRunner) sessionState(ctx workflow.Context) (SessionState, error) {
	actx := untilAnswered(ctx)
	var s SessionState
	err := workflow.ExecuteActivity(actx, ActivitySessionState, t.st.Session.ID).Get(ctx, &s)
	return s, err
}

// refusedIsNothing: a refused transition means someone else moved the
// session first; the recovery stands down.
func refusedIsNothing(ctx workflow.Context, err error) error {
	if isRefused(err) {
		workflow.GetLogger(ctx).Info("lifecycle refused a recovery transition; the session moved on", "error", err)
		return nil
	}
	return err
}

// noteProgress reads a lost turn's last heartbeat: a runtime that had
// reported its conversation confirms it, so the recovery resumes it rather
// than replaying the start.
func (st *State) noteProgress(lost error) {
	var te *temporal.TimeoutError
	if !errors.As(lost, &te) || !te.HasLastHeartbeatDetails() {
		return
	}
	var p TurnProgress
	if err := te.LastHeartbeatDetails(&p); err != nil {
		return
	}
	if p.RuntimeSessionID != "" {
		st.Confirmed, st.RuntimeSessionID = true, p.RuntimeSessionID
	}
}

func (st *State) nodeDeadAfter() time.Duration {
	if st.NodeDeadAfter > 0 {
		return st.NodeDeadAfter
	}
	return DefaultNodeDeadAfter
}
