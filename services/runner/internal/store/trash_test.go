package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// readyWorkspace records a ready workspace for session id.
func readyWorkspace(t *testing.T, repo workspace.Repository, id int64) {
	t.Helper()
	ctx := context.Background()
	_, err := repo.Create(ctx, newWorkspace(id, "node-a", "/w/"+string(rune('a'+id))))
	require.NoError(t, err)
	_, err = repo.Update(ctx, id, func(w *workspace.Workspace) error {
		return w.MarkReady(workspace.Checkout{Branch: "main", Commit: sha1})
	})
	require.NoError(t, err)
}

func TestArchiveRoundTrip(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, repo workspace.Repository) {
		ctx := context.Background()
		deadline := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
		readyWorkspace(t, repo, 1)
		a := workspace.Artifacts{
			Dir: "/p/1", Bundle: "/p/1/unpushed.bundle", BundleBytes: 10, Patch: "/p/1/working_tree.patch", PatchBytes: 20,
			Head: sha1, Branch: "main", Tree: sha1,
		}
		preserved, err := repo.Update(ctx, 1, func(w *workspace.Workspace) error { return w.Preserve(a, deadline, "kept") })
		require.NoError(t, err)
		require.Equal(t, workspace.Preserved, preserved.State)
		require.Equal(t, workspace.Archive{TrashAfter: &deadline, Note: "kept", Artifacts: a}, preserved.Archive)
		got, err := repo.Get(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, preserved, got)

		readyWorkspace(t, repo, 2)
		retained, err := repo.Update(ctx, 2, func(w *workspace.Workspace) error { return w.Retain(deadline, "mangled", 60, 4096) })
		require.NoError(t, err)
		require.Equal(t, workspace.Archive{TrashAfter: &deadline, Note: "mangled", DroppedDeletions: 60, CloneBytes: 4096}, retained.Archive)

		reaped, err := repo.Update(ctx, 1, func(w *workspace.Workspace) error { return w.Reap("gone") })
		require.NoError(t, err)
		require.Equal(t, workspace.Archive{Note: "gone"}, reaped.Archive)

		restored, err := repo.Update(ctx, 2, func(w *workspace.Workspace) error {
			return w.Unarchive(w.Path, nil, workspace.Artifacts{}, "as it stood")
		})
		require.NoError(t, err)
		require.Equal(t, workspace.Ready, restored.State)
		require.Equal(t, workspace.Archive{Note: "as it stood"}, restored.Archive)
	})
}

// TestTrashDueSelectsExactlyWhatExpired: the reaper's selection is the
// retained and preserved workspaces whose deadline is at or before now,
// earliest first; a ready, reaped or not-yet-due one is never listed.
func TestTrashDueSelectsExactlyWhatExpired(t *testing.T) {
	t.Parallel()
	repo := store.NewWorkspaces(pgtest.DB(t, store.Migrations))
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a := workspace.Artifacts{Dir: "/p/x", Tree: sha1}
	for id, edit := range map[int64]func(*workspace.Workspace) error{
		1: func(w *workspace.Workspace) error { return w.Retain(now.Add(-time.Hour), "failed", 0, 1) },  // due
		2: func(w *workspace.Workspace) error { return w.Preserve(a, now.Add(-2*time.Hour), "kept") },   // due, earlier
		3: func(w *workspace.Workspace) error { return w.Preserve(a, now, "kept") },                     // due at now
		4: func(w *workspace.Workspace) error { return w.Preserve(a, now.Add(time.Second), "kept") },    // not yet
		5: func(w *workspace.Workspace) error { return nil },                                            // ready
		6: func(w *workspace.Workspace) error { return w.Reap("clean") },                                // reaped
		7: func(w *workspace.Workspace) error { return w.Retain(now.Add(time.Hour), "mangled", 50, 1) }, // not yet
	} {
		readyWorkspace(t, repo, id)
		_, err := repo.Update(ctx, id, edit)
		require.NoError(t, err)
	}
	due, err := repo.TrashDue(ctx, now, 10)
	require.NoError(t, err)
	var ids []int64
	for _, w := range due {
		ids = append(ids, w.SessionID)
	}
	require.Equal(t, []int64{2, 1, 3}, ids)
	due, err = repo.TrashDue(ctx, now, 1)
	require.NoError(t, err)
	require.Len(t, due, 1)

	ready, err := repo.ReadyAfter(ctx, 0, 10)
	require.NoError(t, err)
	require.Len(t, ready, 1)
	require.EqualValues(t, 5, ready[0].SessionID)
	ready, err = repo.ReadyAfter(ctx, 5, 10)
	require.NoError(t, err)
	require.Empty(t, ready)
}
