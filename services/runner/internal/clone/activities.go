package clone

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// Keeper does the disk's part (workspace.Keeper).
type Keeper interface {
	Preserve(ctx context.Context, id int64, trashAfter time.Time, archived workspace.StatusCheck) (workspace.Result, error)
	Restore(ctx context.Context, id int64, unarchived workspace.StatusCheck) (workspace.Result, error)
	Reap(ctx context.Context, id int64, now time.Time) (workspace.Result, error)
}

// Clones reads the workspaces table (store.Workspaces).
type Clones interface {
	Get(ctx context.Context, sessionID int64) (workspace.Workspace, error)
	TrashDue(ctx context.Context, now time.Time, limit int) ([]workspace.Workspace, error)
	ReadyAfter(ctx context.Context, afterID int64, limit int) ([]workspace.Workspace, error)
}

// Sessions reads sessions from lifecycle, and writes on their timelines
// (clients.Lifecycle).
type Sessions interface {
	ArchiveState(ctx context.Context, id int64) (SessionState, error)
	// ClearTrashExpiry drops the trash deadline of the archive archivedAt
	// names, once nothing of the session is retained; cleared is false when
	// it was not that archive's (or cleared already).
	ClearTrashExpiry(ctx context.Context, id int64, archivedAt time.Time) (cleared bool, err error)
	// Note writes a line on the session's timeline, once per noteID.
	Note(ctx context.Context, id int64, noteID, message string, warning bool) error
}

// Starter starts workflows: the Temporal client.
type Starter = rw.WorkflowStarter

// StartCleanup starts session in.SessionID's clean-up; started is false when
// one is running already (it re-reads the session before it acts, so it
// serves this archive too).
func StartCleanup(ctx context.Context, s Starter, in CleanupInput) (started bool, err error) {
	return rw.StartOnce(ctx, s, CleanupID(in.SessionID), CleanupWorkflowName, in)
}

// StartRestore starts session id's restore; started is false when one is
// running already.
func StartRestore(ctx context.Context, s Starter, id int64) (started bool, err error) {
	return rw.StartOnce(ctx, s, RestoreID(id), RestoreWorkflowName, RestoreInput{SessionID: id})
}

// Activities are the clone workflows' activities. The shared ones read the
// database and lifecycle on any node; the node ones need Keeper, the disk
// of the node that registers them.
type Activities struct {
	Keeper   Keeper
	Clones   Clones
	Sessions Sessions
	Starter  Starter
	// TrashRetention is the deadline the backstop gives a stale clone whose
	// session holds none, counted from its archive.
	TrashRetention time.Duration
	Logger         *slog.Logger
}

// RegisterWorkflows registers the workflows on the shared queue's worker.
func RegisterWorkflows(w worker.Registry) {
	w.RegisterWorkflowWithOptions(Cleanup, workflow.RegisterOptions{Name: CleanupWorkflowName})
	w.RegisterWorkflowWithOptions(Restore, workflow.RegisterOptions{Name: RestoreWorkflowName})
	w.RegisterWorkflowWithOptions(Reaper, workflow.RegisterOptions{Name: ReaperWorkflowName})
}

// RegisterShared registers the shared activities.
func (a *Activities) RegisterShared(w worker.Registry) {
	w.RegisterActivityWithOptions(a.Locate, activity.RegisterOptions{Name: ActivityLocate})
	w.RegisterActivityWithOptions(a.SessionState, activity.RegisterOptions{Name: ActivitySessionState})
	w.RegisterActivityWithOptions(a.Note, activity.RegisterOptions{Name: ActivityNote})
	w.RegisterActivityWithOptions(a.ClearTrashExpiry, activity.RegisterOptions{Name: ActivityClearTrashExpiry})
	w.RegisterActivityWithOptions(a.TrashDue, activity.RegisterOptions{Name: ActivityTrashDue})
	w.RegisterActivityWithOptions(a.CleanUpStaleClones, activity.RegisterOptions{Name: ActivityStaleClones})
}

// RegisterNode registers the node activities on the node's worker.
func (a *Activities) RegisterNode(w worker.Registry) {
	w.RegisterActivityWithOptions(a.PreserveClone, activity.RegisterOptions{Name: ActivityPreserve})
	w.RegisterActivityWithOptions(a.RestoreClone, activity.RegisterOptions{Name: ActivityRestore})
	w.RegisterActivityWithOptions(a.ReapClone, activity.RegisterOptions{Name: ActivityReap})
}

// ClearTrashExpiry tells lifecycle nothing of the session is retained any
// more, so its trash_after goes.
func (a *Activities) ClearTrashExpiry(ctx context.Context, req ClearTrashRequest) (bool, error) {
	return a.Sessions.ClearTrashExpiry(ctx, req.SessionID, req.ArchivedAt)
}

// Note says on the session's timeline what became of its clone.
func (a *Activities) Note(ctx context.Context, req NoteRequest) error {
	return a.Sessions.Note(ctx, req.SessionID, req.ID, req.Message, req.Warning)
}

// Locate says which node holds session id's clone.
func (a *Activities) Locate(ctx context.Context, id int64) (Location, error) {
	w, err := a.Clones.Get(ctx, id)
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		return Location{}, nil
	case err != nil:
		return Location{}, err
	}
	return Location{Found: true, Node: w.Node, State: w.State}, nil
}

// SessionState reads session id from lifecycle.
func (a *Activities) SessionState(ctx context.Context, id int64) (SessionState, error) {
	return a.Sessions.ArchiveState(ctx, id)
}

// TrashDue lists what the trash keeps past its deadline at now.
func (a *Activities) TrashDue(ctx context.Context, now time.Time, limit int) ([]Due, error) {
	ws, err := a.Clones.TrashDue(ctx, now, limit)
	if err != nil {
		return nil, err
	}
	due := make([]Due, len(ws))
	for i, w := range ws {
		due[i] = Due{SessionID: w.SessionID, Node: w.Node}
	}
	return due, nil
}

// staleBatch is how many ready clones the backstop reads per page.
const staleBatch = 200

// CleanUpStaleClones is the backstop of a clean-up that never ran (the
// spec's StaleCloneCleanupJob): every clone still ready whose session has
// been archived (or deleted) for StaleAfter gets its clean-up started, with
// no undo window and the session's trash deadline (or archived_at plus
// TrashRetention when it holds none). It preserves rather than deletes: the
// clone may hold the session's only copy of its work. It returns how many
// it started; a session lifecycle cannot answer for is skipped until the
// next run.
func (a *Activities) CleanUpStaleClones(ctx context.Context, now time.Time) (int, error) {
	started := 0
	var after int64
	for {
		page, err := a.Clones.ReadyAfter(ctx, after, staleBatch)
		if err != nil {
			return started, err
		}
		for _, w := range page {
			after = w.SessionID
			s, err := a.Sessions.ArchiveState(ctx, w.SessionID)
			if err != nil {
				a.Logger.Warn("stale-clone backstop: cannot read the session; the next run asks again",
					"session_id", w.SessionID, "error", err)
				continue
			}
			if !s.Archived() || (s.ArchivedAt != nil && now.Sub(*s.ArchivedAt) < StaleAfter) {
				continue
			}
			in := CleanupInput{SessionID: w.SessionID, TrashAfter: s.trashAfter(now, a.TrashRetention)}
			ok, err := StartCleanup(ctx, a.Starter, in)
			if err != nil {
				return started, err
			}
			if ok {
				started++
				a.Logger.Info("stale-clone backstop: a clone still on disk after its session's archive is cleaned up now",
					"session_id", w.SessionID, "node", w.Node, "path", w.Path, "trash_after", in.TrashAfter)
			}
		}
		activity.RecordHeartbeat(ctx, after)
		if len(page) < staleBatch {
			return started, nil
		}
	}
}

// trashAfter is the session's deadline, or one retention after its archive
// (after now when it has no archive time).
func (s SessionState) trashAfter(now time.Time, retention time.Duration) time.Time {
	switch {
	case s.TrashAfter != nil:
		return *s.TrashAfter
	case s.ArchivedAt != nil:
		return s.ArchivedAt.Add(retention)
	}
	return now.Add(retention)
}

// PreserveClone preserves or deletes the session's clone on this node.
func (a *Activities) PreserveClone(ctx context.Context, req PreserveRequest) (Report, error) {
	defer heartbeating(ctx)()
	res, err := a.Keeper.Preserve(ctx, req.SessionID, req.TrashAfter, func(ctx context.Context) (bool, error) {
		s, err := a.Sessions.ArchiveState(ctx, req.SessionID)
		return s.Archived(), err
	})
	if err != nil {
		return Report{}, nodeError(err)
	}
	a.log(req.SessionID, res)
	return report(res), nil
}

// RestoreClone restores the session's clone on this node.
func (a *Activities) RestoreClone(ctx context.Context, id int64) (Report, error) {
	defer heartbeating(ctx)()
	res, err := a.Keeper.Restore(ctx, id, func(ctx context.Context) (bool, error) {
		s, err := a.Sessions.ArchiveState(ctx, id)
		return !s.Archived(), err
	})
	var perr *workspace.PrepareError
	if errors.As(err, &perr) && !perr.Retryable {
		return Report{}, temporal.NewNonRetryableApplicationError(perr.Reason, ErrCloneUnmakeable, err)
	}
	if err != nil {
		return Report{}, nodeError(err)
	}
	a.log(id, res)
	return report(res), nil
}

// ReapClone deletes what the trash kept of the session's clone, if due.
func (a *Activities) ReapClone(ctx context.Context, req ReapRequest) (Report, error) {
	defer heartbeating(ctx)()
	res, err := a.Keeper.Reap(ctx, req.SessionID, req.Now)
	if err != nil {
		return Report{}, nodeError(err)
	}
	return report(res), nil
}

// heartbeating beats the activity's heartbeat every diskHeartbeat until
// the returned stop is called: the disk work gives git no point to beat
// from, and a node that dies mid-work must be noticed.
func heartbeating(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(diskHeartbeat)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

func nodeError(err error) error {
	if errors.Is(err, workspace.ErrOtherNode) {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrOtherNode, err)
	}
	return err
}

// log says on the node what became of a clone (the workflow says it too):
// a vanished clone at info, as the spec has it; a clone kept whole or
// restored without its work as a warning.
func (a *Activities) log(id int64, r workspace.Result) {
	level := slog.LevelInfo
	switch r.Outcome {
	case workspace.OutcomeMangled, workspace.OutcomeExtractionFailed, workspace.OutcomeRestoredPristine:
		level = slog.LevelWarn
	}
	a.Logger.Log(context.Background(), level, "session clone: "+r.Detail, "session_id", id, "outcome", string(r.Outcome),
		"state", string(r.Workspace.State), "path", r.Workspace.Path, "artifacts_dir", r.Workspace.Archive.Artifacts.Dir)
}
