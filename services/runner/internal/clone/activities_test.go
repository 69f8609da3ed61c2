package clone_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/runner/internal/clone"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

type fakeSessions map[int64]clone.SessionState

func (f fakeSessions) Note(context.Context, int64, string, string, bool) error { return nil }

func (f fakeSessions) ClearTrashExpiry(context.Context, int64, time.Time) (bool, error) {
	return true, nil
}

func (f fakeSessions) ArchiveState(_ context.Context, id int64) (clone.SessionState, error) {
	if s, ok := f[id]; ok {
		return s, nil
	}
	return clone.SessionState{Status: "deleted"}, nil
}

// fakeStarter records the workflows started; running ids answer
// AlreadyStarted.
type fakeStarter struct {
	mu      sync.Mutex
	running map[string]bool
	started []client.StartWorkflowOptions
	args    []any
}

func (f *fakeStarter) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running[o.ID] {
		return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("running", "", "")
	}
	f.started = append(f.started, o)
	f.args = append(f.args, args...)
	return nil, nil
}

// TestBackstopStartsTheCleanUpOfClonesArchivedAnHourAgo: against the
// workspaces table, exactly the ready clones of sessions archived (or
// deleted) at least an hour ago get a clean-up with no undo window and
// the session's deadline (or archived_at plus the retention); a running
// clean-up is not started twice.
func TestBackstopStartsTheCleanUpOfClonesArchivedAnHourAgo(t *testing.T) {
	t.Parallel()
	repo := store.NewWorkspaces(pgtest.DB(t, store.Migrations))
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(-d); return &v }
	deadline := now.Add(72 * time.Hour)
	for id := int64(1); id <= 7; id++ {
		_, err := repo.Create(ctx, workspace.NewWorkspace(workspace.Spec{SessionID: id, GitRoot: "/r"}, "a", "/w/"+string(rune('0'+id))))
		require.NoError(t, err)
		_, err = repo.Update(ctx, id, func(w *workspace.Workspace) error { return w.MarkReady(workspace.Checkout{}) })
		require.NoError(t, err)
	}
	// 6's clone was preserved already: not ready, never asked about.
	_, err := repo.Update(ctx, 6, func(w *workspace.Workspace) error {
		return w.Preserve(workspace.Artifacts{Dir: "/p/6"}, deadline, "kept")
	})
	require.NoError(t, err)
	sessions := fakeSessions{
		1: {Status: "archived", ArchivedAt: at(2 * time.Hour), TrashAfter: &deadline}, // stale
		2: {Status: "archived", ArchivedAt: at(59 * time.Minute)},                     // inside the hour
		3: {Status: "needs_input"},                                                    // in use
		4: {Status: "archived", ArchivedAt: at(time.Hour)},                            // stale, no deadline
		// 5 is deleted: stale
		6: {Status: "archived", ArchivedAt: at(5 * time.Hour)},
		7: {Status: "archived", ArchivedAt: at(3 * time.Hour)}, // its clean-up is running
	}
	starter := &fakeStarter{running: map[string]bool{clone.CleanupID(7): true}}
	acts := &clone.Activities{Clones: repo, Sessions: sessions, Starter: starter, TrashRetention: 96 * time.Hour, Logger: slogx.Discard()}

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(acts.CleanUpStaleClones, activity.RegisterOptions{Name: clone.ActivityStaleClones})
	got, err := env.ExecuteActivity(clone.ActivityStaleClones, now)
	require.NoError(t, err)
	var n int
	require.NoError(t, got.Get(&n))
	require.Equal(t, 3, n)
	var ids []string
	for _, o := range starter.started {
		ids = append(ids, o.ID)
		require.Equal(t, "zimmer-runner", o.TaskQueue)
	}
	require.Equal(t, []string{clone.CleanupID(1), clone.CleanupID(4), clone.CleanupID(5)}, ids)
	require.Equal(t, []any{
		clone.CleanupInput{SessionID: 1, TrashAfter: deadline},
		clone.CleanupInput{SessionID: 4, TrashAfter: now.Add(-time.Hour).Add(96 * time.Hour)},
		clone.CleanupInput{SessionID: 5, TrashAfter: now.Add(96 * time.Hour)},
	}, starter.args)
}

func TestStartCleanupAndRestoreAreOncePerRun(t *testing.T) {
	t.Parallel()
	starter := &fakeStarter{running: map[string]bool{clone.RestoreID(3): true}}
	ok, err := clone.StartCleanup(context.Background(), starter, clone.CleanupInput{SessionID: 3})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = clone.StartRestore(context.Background(), starter, 3)
	require.NoError(t, err)
	require.False(t, ok, "a restore already running does this one's work")
	require.Equal(t, "session/3/clone-cleanup", starter.started[0].ID)
	require.True(t, starter.started[0].WorkflowExecutionErrorWhenAlreadyStarted)
}
