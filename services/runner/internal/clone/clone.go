// Package clone runs a session's clone through its life after archive on
// Temporal, on the node whose disk holds it:
//
//   - session/<session>/clone-cleanup (zimmer.runner.CloneCleanup), started by the
//     archive's enqueue_deferred_cleanup effect: it waits the undo window
//     (a workflow timer), re-reads the session, and if it is still archived
//     preserves or deletes the clone (workspace.Keeper.Preserve), which asks
//     again under the clone's lock right before deleting anything.
//   - session/<session>/clone-restore (zimmer.runner.CloneRestore), started by the
//     unarchive's restore_clone effect: it brings the clone back at the path
//     the session's turns know (workspace.Keeper.Restore).
//   - the Temporal Schedule runner-trash-reaper (zimmer.runner.TrashReaper):
//     deletes retained clones and preserved artifacts whose trash deadline
//     passed, and, as the backstop of a clean-up that never ran, starts the
//     clean-up of a clone whose session has been archived for an hour.
//
// Workflows run on zimmer-runner; every activity that touches a disk runs on
// zimmer-runner-<node>, the node the workspaces table names.
package clone

import (
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/platform/workflowid"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// runner and reaperJob name the trash reaper's periodic job.
const (
	runner    = "runner"
	reaperJob = "trash-reaper"
)

// ReaperScheduleID is the trash reaper's schedule and the id of the
// workflows it starts.
var ReaperScheduleID = periodic.ScheduleID(runner, reaperJob)

// Workflow and activity names, as the Temporal Web UI shows them.
const (
	CleanupWorkflowName = "zimmer.runner.CloneCleanup"
	RestoreWorkflowName = "zimmer.runner.CloneRestore"
	ReaperWorkflowName  = "zimmer.runner.TrashReaper"

	// Shared activities (any node: the database and lifecycle).
	ActivityLocate       = "zimmer.runner.LocateClone"
	ActivitySessionState = "zimmer.runner.CloneSessionState"
	// ActivityNote says on the session's timeline what became of its
	// clone (NoteRequest).
	ActivityNote        = "zimmer.runner.CloneNote"
	ActivityTrashDue    = "zimmer.runner.ListTrashDue"
	ActivityStaleClones = "zimmer.runner.CleanUpStaleClones"
	// ActivityClearTrashExpiry tells lifecycle nothing of an archived
	// session is retained any more (ClearTrashRequest).
	ActivityClearTrashExpiry = "zimmer.runner.ClearTrashExpiry"
	// Node activities (the disk holding the clone).
	ActivityPreserve = "zimmer.runner.PreserveClone"
	ActivityRestore  = "zimmer.runner.RestoreClone"
	ActivityReap     = "zimmer.runner.ReapClone"
)

// Defaults of the runner's configuration for the clone's life.
const (
	// DefaultUndoWindow is RUNNER_CLONE_UNDO_WINDOW: how long after an
	// archive the clone is left alone, so an undo finds it as it was.
	DefaultUndoWindow = 2 * time.Minute
	// DefaultReapInterval is RUNNER_TRASH_REAP_INTERVAL.
	DefaultReapInterval = time.Hour
	// StaleAfter is the backstop's age (the spec's StaleCloneCleanupJob): a
	// clone still on disk an hour after its session's archive had its
	// clean-up lost.
	StaleAfter = time.Hour
	// DefaultTrashRetention is RUNNER_TRASH_RETENTION: the deadline the
	// backstop gives a clone whose session holds none (the spec's
	// TRASH_RETENTION_PERIOD).
	DefaultTrashRetention = 96 * time.Hour
)

// CleanupID is the workflow id of session id's clean-up.
func CleanupID(id int64) string { return workflowid.CloneCleanup(id) }

// RestoreID is the workflow id of session id's restore.
func RestoreID(id int64) string { return workflowid.CloneRestore(id) }

// CleanupInput starts a clean-up.
type CleanupInput struct {
	SessionID int64
	// TrashAfter is the deadline of what is kept, from the archive (the
	// session's trash_after, anchored to archived_at).
	TrashAfter time.Time
	// UndoWindow is waited first; 0 for the backstop, whose session has
	// been archived for an hour already.
	UndoWindow time.Duration
}

// RestoreInput starts a restore.
type RestoreInput struct {
	SessionID int64
}

// Location is where a session's clone is: the node holding it, and its
// state there.
type Location struct {
	Found bool
	Node  string
	State workspace.State
}

// SessionState is what the clone's life reads of a session from lifecycle.
type SessionState struct {
	// Status is the session's status; domain.StatusGone when lifecycle has
	// no such session.
	Status     string
	ArchivedAt *time.Time
	TrashAfter *time.Time
}

// Archived says whether the session is in the trash (a deleted session's
// clone is garbage too: it is cleaned up like an archived one's).
func (s SessionState) Archived() bool {
	return s.Status == rules.StatusArchived || s.Status == domain.StatusGone
}

// Report is what a node activity did with a clone, for the workflow's
// result and log.
type Report struct {
	Outcome workspace.Outcome
	State   workspace.State
	Path    string
	// ArtifactsDir is where preserved work is, when there is any.
	ArtifactsDir string
	TrashAfter   *time.Time
	Detail       string
}

func report(r workspace.Result) Report {
	w := r.Workspace
	return Report{
		Outcome: r.Outcome, State: w.State, Path: w.Path, ArtifactsDir: w.Archive.Artifacts.Dir,
		TrashAfter: w.Archive.TrashAfter, Detail: r.Detail,
	}
}

// NoteRequest is one line for a session's timeline; ID (a UUID drawn by
// the workflow) makes a retried note harmless.
type NoteRequest struct {
	SessionID int64
	ID        string
	Message   string
	Warning   bool
}

// ClearTrashRequest names the archive whose trash holds nothing any more.
type ClearTrashRequest struct {
	SessionID  int64
	ArchivedAt time.Time
}

// PreserveRequest is the node activity's input.
type PreserveRequest struct {
	SessionID  int64
	TrashAfter time.Time
}

// Due is a kept thing whose trash deadline passed.
type Due struct {
	SessionID int64
	Node      string
}

// ReapRequest is the node activity's input.
type ReapRequest struct {
	SessionID int64
	Now       time.Time
}

// ReaperResult is what one run of the trash reaper did.
type ReaperResult struct {
	Reaped int
	// Failed are the sessions whose reaping failed this run (the next run
	// tries again).
	Failed []int64
	// CleanupsStarted are the stale clones' clean-ups the backstop started.
	CleanupsStarted int
}
