package clone

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// ErrOtherNode is the error type of a node activity sent to a node that
// does not hold the clone (the workspaces table moved on): not retried.
const ErrOtherNode = "CloneOnOtherNode"

// ErrCloneUnmakeable is the error type of a restore whose clone cannot be
// made again (git_root gone, branch deleted): not retried.
const ErrCloneUnmakeable = "CloneUnmakeable"

// Timeouts of the activities.
const (
	sharedTimeout = 30 * time.Second
	// diskTimeout bounds one preservation, restore or reaping: a bundle, an
	// add -A and a diff over a large tree, or a clone.
	diskTimeout = 30 * time.Minute
	// diskHeartbeatTimeout: a node that dies mid-work is noticed this soon
	// (the activity beats every diskHeartbeat while git works), and the work
	// is retried rather than waited out for diskTimeout.
	diskHeartbeatTimeout = time.Minute
	diskHeartbeat        = 10 * time.Second
	// reapStartTimeout is how long the reaper waits for a node to take its
	// work: a node that is down is left to the next run.
	reapStartTimeout = 10 * time.Minute
	// staleTimeout bounds one pass of the stale-clone backstop.
	staleTimeout = 10 * time.Minute
	// reapBatch is how many kept things one reaper run deletes.
	reapBatch = 200
)

func sharedOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           rw.TaskQueue,
		StartToCloseTimeout: sharedTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
		},
	})
}

// nodeOptions run an activity on the node holding the clone. No
// ScheduleToStart bound: the clone is on that disk only, so the work waits
// for the node to come back.
func nodeOptions(ctx workflow.Context, node string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           rw.NodeTaskQueue(node),
		StartToCloseTimeout: diskTimeout,
		HeartbeatTimeout:    diskHeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 10 * time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Minute, MaximumAttempts: 10,
			NonRetryableErrorTypes: []string{ErrOtherNode, ErrCloneUnmakeable},
		},
	})
}

// Cleanup is the archive's deferred clean-up of a session's clone: the undo
// window, a re-read of the session (unarchived meanwhile: nothing to do),
// then preservation or deletion on the clone's node.
func Cleanup(ctx workflow.Context, in CleanupInput) (Report, error) {
	log := workflow.GetLogger(ctx)
	if in.UndoWindow > 0 {
		if err := workflow.Sleep(ctx, in.UndoWindow); err != nil {
			return Report{}, err
		}
	}
	var s SessionState
	if err := workflow.ExecuteActivity(sharedOptions(ctx), ActivitySessionState, in.SessionID).Get(ctx, &s); err != nil {
		return Report{}, fmt.Errorf("read session %d: %w", in.SessionID, err)
	}
	if !s.Archived() {
		log.Info("session no longer archived: its clone is left as it is", "session_id", in.SessionID, "status", s.Status)
		return Report{Outcome: workspace.OutcomeStoodDown, Detail: "the session is " + s.Status}, nil
	}
	trashAfter := in.TrashAfter
	if s.TrashAfter != nil {
		// The session's own deadline: a later archive's, when this run
		// serves a second archive inside its undo window.
		trashAfter = *s.TrashAfter
	}
	var loc Location
	if err := workflow.ExecuteActivity(sharedOptions(ctx), ActivityLocate, in.SessionID).Get(ctx, &loc); err != nil {
		return Report{}, fmt.Errorf("locate the clone of session %d: %w", in.SessionID, err)
	}
	if !loc.Found {
		log.Info("session has no clone: nothing to clean up", "session_id", in.SessionID)
		r := Report{Outcome: workspace.OutcomeNoClone, Detail: "the session has no clone"}
		clearTrash(ctx, in.SessionID, s, r)
		return r, nil
	}
	var r Report
	err := workflow.ExecuteActivity(nodeOptions(ctx, loc.Node), ActivityPreserve,
		PreserveRequest{SessionID: in.SessionID, TrashAfter: trashAfter}).Get(ctx, &r)
	if err != nil {
		return Report{}, fmt.Errorf("clean up the clone of session %d on node %s: %w", in.SessionID, loc.Node, err)
	}
	logReport(ctx, in.SessionID, loc.Node, r)
	note(ctx, in.SessionID, loc.Node, r)
	clearTrash(ctx, in.SessionID, s, r)
	return r, nil
}

// clearTrash drops the session's trash deadline when the clean-up left
// nothing of it (workspace.Outcome.RetainsNothing): trash_after is the
// deadline of what the trash holds. Only for the archive it read (a
// deleted session has none); a deadline that cannot be cleared is logged,
// never fails the clean-up, whose work is done.
func clearTrash(ctx workflow.Context, id int64, s SessionState, r Report) {
	if !r.Outcome.RetainsNothing() || s.ArchivedAt == nil || s.TrashAfter == nil {
		return
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              rw.TaskQueue,
		StartToCloseTimeout:    sharedTimeout,
		ScheduleToCloseTimeout: 5 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var cleared bool
	err := workflow.ExecuteActivity(actx, ActivityClearTrashExpiry, ClearTrashRequest{SessionID: id, ArchivedAt: *s.ArchivedAt}).Get(ctx, &cleared)
	if err != nil {
		workflow.GetLogger(ctx).Warn("clear the trash deadline of a session nothing is retained of; it stays until it passes",
			"session_id", id, "error", err)
		return
	}
	workflow.GetLogger(ctx).Info("session retains nothing: trash deadline cleared", "session_id", id, "cleared", cleared)
}

// reaperClearsTrashChange names the reaper's change that clears the trash
// deadline of what it reaped (workflow.GetVersion).
const reaperClearsTrashChange = "reaper-clears-trash-deadline"

// clearReaped drops the trash deadline of session id, whose kept clone or
// artifacts the reaper deleted at now: only while the session still holds
// a deadline that has passed — the one the reaping acted on; a later one
// (archived again since) is that archive's to keep. A session that cannot
// be read keeps its deadline, and that is logged: the clearing is
// bookkeeping, never a reason for the reaping to fail.
func clearReaped(ctx workflow.Context, id int64, now time.Time) {
	var s SessionState
	if err := workflow.ExecuteActivity(sharedOptions(ctx), ActivitySessionState, id).Get(ctx, &s); err != nil {
		workflow.GetLogger(ctx).Warn("read a reaped session to clear its trash deadline; it stays", "session_id", id, "error", err)
		return
	}
	if s.TrashAfter == nil || s.TrashAfter.After(now) {
		return
	}
	clearTrash(ctx, id, s, Report{Outcome: workspace.OutcomeReaped})
}

// Restore is the unarchive's: the session's clone comes back on its node.
func Restore(ctx workflow.Context, in RestoreInput) (Report, error) {
	var loc Location
	if err := workflow.ExecuteActivity(sharedOptions(ctx), ActivityLocate, in.SessionID).Get(ctx, &loc); err != nil {
		return Report{}, fmt.Errorf("locate the clone of session %d: %w", in.SessionID, err)
	}
	if !loc.Found {
		workflow.GetLogger(ctx).Info("session has no clone: its next turn makes one", "session_id", in.SessionID)
		return Report{Outcome: workspace.OutcomeNoClone, Detail: "the session has no clone"}, nil
	}
	var r Report
	if err := workflow.ExecuteActivity(nodeOptions(ctx, loc.Node), ActivityRestore, in.SessionID).Get(ctx, &r); err != nil {
		workflow.GetLogger(ctx).Error("the session's clone could not be restored; what was kept stays where it is",
			"session_id", in.SessionID, "node", loc.Node, "error", err)
		return Report{}, fmt.Errorf("restore the clone of session %d on node %s: %w", in.SessionID, loc.Node, err)
	}
	logReport(ctx, in.SessionID, loc.Node, r)
	note(ctx, in.SessionID, loc.Node, r)
	return r, nil
}

// logReport logs what became of a clone at the level the spec gives it: a
// vanished clone is info, a clone kept whole because it is mangled or its
// work could not be extracted, or restored without its work, a warning
// the session's owner can find by the session id.
// note says on the session's timeline what became of its clone and where
// its work is: the session's page is where its owner looks. A note that
// cannot be written is logged; the clone's work is done either way.
func note(ctx workflow.Context, id int64, node string, r Report) {
	switch r.Outcome {
	case workspace.OutcomeStoodDown, workspace.OutcomeNoClone, workspace.OutcomeUnchanged:
		return // nothing became of it
	}
	var noteID string
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return uuid.NewString() }).Get(&noteID); err != nil {
		workflow.GetLogger(ctx).Warn("draw a note id", "session_id", id, "error", err)
		return
	}
	warning := false
	switch r.Outcome {
	case workspace.OutcomeMangled, workspace.OutcomeExtractionFailed, workspace.OutcomeRestoredPristine:
		warning = true
	}
	message := fmt.Sprintf("[Clone] On runner node %q, %s.", node, r.Detail)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              rw.TaskQueue,
		StartToCloseTimeout:    sharedTimeout,
		ScheduleToCloseTimeout: 5 * time.Minute, // a line, not the clone's work: give up in time
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	err := workflow.ExecuteActivity(actx, ActivityNote,
		NoteRequest{SessionID: id, ID: noteID, Message: message, Warning: warning}).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("say on the timeline what became of the clone", "session_id", id, "error", err)
	}
}

func logReport(ctx workflow.Context, id int64, node string, r Report) {
	log := workflow.GetLogger(ctx)
	kv := []any{"session_id", id, "node", node, "outcome", string(r.Outcome), "state", string(r.State),
		"path", r.Path, "artifacts_dir", r.ArtifactsDir, "detail", r.Detail}
	switch r.Outcome {
	case workspace.OutcomeMangled, workspace.OutcomeExtractionFailed, workspace.OutcomeRestoredPristine:
		log.Warn("session clone: "+r.Detail, kv...)
	default:
		log.Info("session clone: "+r.Detail, kv...)
	}
}

// Reaper is one run of the trash reaper: every kept clone or artifacts
// whose deadline passed is deleted on its node (a node that does not take
// the work in time is left to the next run), then the backstop starts the
// clean-up of clones whose session has been archived for StaleAfter.
func Reaper(ctx workflow.Context) (ReaperResult, error) {
	log := workflow.GetLogger(ctx)
	now := workflow.Now(ctx)
	var due []Due
	if err := workflow.ExecuteActivity(sharedOptions(ctx), ActivityTrashDue, now, reapBatch).Get(ctx, &due); err != nil {
		return ReaperResult{}, fmt.Errorf("list what the trash holds past its deadline: %w", err)
	}
	futures := make([]workflow.Future, len(due))
	for i, d := range due {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue: rw.NodeTaskQueue(d.Node), ScheduleToStartTimeout: reapStartTimeout, StartToCloseTimeout: diskTimeout,
			HeartbeatTimeout: diskHeartbeatTimeout,
			RetryPolicy:      &temporal.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{ErrOtherNode}},
		})
		futures[i] = workflow.ExecuteActivity(actx, ActivityReap, ReapRequest{SessionID: d.SessionID, Now: now})
	}
	var res ReaperResult
	var reaped []int64
	for i, f := range futures {
		var r Report
		if err := f.Get(ctx, &r); err != nil {
			log.Warn("could not reap a session's clone; the next run tries again", "session_id", due[i].SessionID,
				"node", due[i].Node, "error", err)
			res.Failed = append(res.Failed, due[i].SessionID)
			continue
		}
		if r.Outcome == workspace.OutcomeReaped {
			res.Reaped++
			reaped = append(reaped, due[i].SessionID)
			log.Info("session clone: "+r.Detail, "session_id", due[i].SessionID, "node", due[i].Node)
		}
	}
	// What was reaped is what the trash held: its session's trash_after
	// now deadlines nothing and goes, as after a clean-up that kept nothing
	// (RN-31). Versioned: a run begun before this replays without it.
	if workflow.GetVersion(ctx, reaperClearsTrashChange, workflow.DefaultVersion, 1) >= 1 {
		for _, id := range reaped {
			clearReaped(ctx, id, now)
		}
	}
	// The backstop asks lifecycle about every ready clone: its own bounds.
	sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue: rw.TaskQueue, StartToCloseTimeout: staleTimeout, HeartbeatTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	if err := workflow.ExecuteActivity(sctx, ActivityStaleClones, now).Get(ctx, &res.CleanupsStarted); err != nil {
		return res, fmt.Errorf("start the clean-up of stale clones: %w", err)
	}
	log.Info("trash reaped", "reaped", res.Reaped, "failed", len(res.Failed), "stale_cleanups_started", res.CleanupsStarted)
	return res, nil
}
