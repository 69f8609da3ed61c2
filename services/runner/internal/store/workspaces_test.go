package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace/workspacetest"
)

// repositories are the workspace.Repository implementations the contract
// holds to the same behaviour: the in-memory fake the workspace tests use,
// and the workspaces table.
var repositories = map[string]func(t *testing.T) workspace.Repository{
	"fake":     func(*testing.T) workspace.Repository { return workspacetest.NewMemory() },
	"postgres": func(t *testing.T) workspace.Repository { return store.NewWorkspaces(pgtest.DB(t, store.Migrations)) },
}

func forEachRepository(t *testing.T, test func(t *testing.T, repo workspace.Repository)) {
	t.Helper()
	for name, newRepo := range repositories {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newRepo(t))
		})
	}
}

func newWorkspace(id int64, node, path string) workspace.Workspace {
	return workspace.NewWorkspace(workspace.Spec{
		SessionID: id, GitRoot: "https://example.com/repo.git", Branch: "main", Subdirectory: "services/api",
	}, node, path)
}

func TestWorkspaceRoundTrip(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, repo workspace.Repository) {
		ctx := context.Background()
		_, err := repo.Get(ctx, 1)
		require.ErrorIs(t, err, workspace.ErrNotFound)

		created, err := repo.Create(ctx, newWorkspace(1, "node-a", "/w/1"))
		require.NoError(t, err)
		require.False(t, created.CreatedAt.IsZero())
		require.Equal(t, created.CreatedAt, created.UpdatedAt)
		want := newWorkspace(1, "node-a", "/w/1")
		want.CreatedAt, want.UpdatedAt = created.CreatedAt, created.UpdatedAt
		require.Equal(t, want, created)
		got, err := repo.Get(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, created, got)

		ready, err := repo.Update(ctx, 1, func(w *workspace.Workspace) error {
			return w.MarkReady(workspace.Checkout{Branch: "main", Commit: sha1})
		})
		require.NoError(t, err)
		want.State, want.CheckedOutBranch, want.BaseCommit = workspace.Ready, "main", sha1
		want.UpdatedAt = ready.UpdatedAt
		require.Equal(t, want, ready)
		require.False(t, ready.UpdatedAt.Before(created.UpdatedAt))
		got, err = repo.Get(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, ready, got)

		// A failed attempt keeps its reason; a new one clears it.
		_, err = repo.Create(ctx, newWorkspace(2, "node-a", "/w/2"))
		require.NoError(t, err)
		failed, err := repo.Update(ctx, 2, func(w *workspace.Workspace) error { return w.MarkFailed("git said no") })
		require.NoError(t, err)
		require.Equal(t, workspace.Failed, failed.State)
		require.Equal(t, "git said no", failed.FailureReason)
		again, err := repo.Update(ctx, 2, func(w *workspace.Workspace) error { return w.Reprovision(w.Spec(), "/w2/2") })
		require.NoError(t, err)
		require.Equal(t, workspace.Provisioning, again.State)
		require.Empty(t, again.FailureReason)
		require.Equal(t, "/w2/2", again.Path)
	})
}

func TestWorkspaceCreateRefusesASecondForASessionOrAPath(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, repo workspace.Repository) {
		ctx := context.Background()
		_, err := repo.Create(ctx, newWorkspace(1, "node-a", "/w/1"))
		require.NoError(t, err)
		_, err = repo.Create(ctx, newWorkspace(1, "node-b", "/w/other"))
		require.ErrorIs(t, err, workspace.ErrAlreadyExists, "a second workspace for session 1")
		_, err = repo.Create(ctx, newWorkspace(2, "node-a", "/w/1"))
		require.ErrorIs(t, err, workspace.ErrAlreadyExists, "session 2 in session 1's directory")
		_, err = repo.Create(ctx, newWorkspace(3, "node-b", "/w/1"))
		require.NoError(t, err, "the same path on another node")

		// A failed workspace has nothing on disk, so its path is free.
		_, err = repo.Update(ctx, 1, func(w *workspace.Workspace) error { return w.MarkFailed("no") })
		require.NoError(t, err)
		_, err = repo.Create(ctx, newWorkspace(4, "node-a", "/w/1"))
		require.NoError(t, err)
		_, err = repo.Update(ctx, 1, func(w *workspace.Workspace) error { return w.Reprovision(w.Spec(), "/w/1") })
		require.ErrorIs(t, err, workspace.ErrAlreadyExists, "taking back a path another workspace holds")
	})
}

func TestWorkspaceUpdate(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, repo workspace.Repository) {
		ctx := context.Background()
		_, err := repo.Update(ctx, 1, func(*workspace.Workspace) error { return nil })
		require.ErrorIs(t, err, workspace.ErrNotFound)

		created, err := repo.Create(ctx, newWorkspace(1, "node-a", "/w/1"))
		require.NoError(t, err)
		refused := errors.New("refused")
		_, err = repo.Update(ctx, 1, func(w *workspace.Workspace) error {
			w.Path = "/elsewhere"
			return refused
		})
		require.ErrorIs(t, err, refused)
		_, err = repo.Update(ctx, 1, func(w *workspace.Workspace) error { return w.Reprovision(w.Spec(), "/x") })
		require.NoError(t, err)
		_, err = repo.Update(ctx, 1, func(w *workspace.Workspace) error { return w.MarkReady(workspace.Checkout{}) })
		require.NoError(t, err)
		_, err = repo.Update(ctx, 1, func(w *workspace.Workspace) error { return w.MarkFailed("late") })
		var transition *workspace.TransitionError
		require.ErrorAs(t, err, &transition)
		require.Equal(t, workspace.TransitionError{From: workspace.Ready, To: workspace.Failed}, *transition)
		got, err := repo.Get(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, workspace.Ready, got.State)
		require.Equal(t, "/x", got.Path)
		require.Equal(t, created.CreatedAt, got.CreatedAt, "an update keeps the creation time")
	})
}

// Concurrent updates of one workspace apply one after the other: none is
// lost to another's stale read.
func TestWorkspaceUpdatesDoNotLoseEachOther(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, repo workspace.Repository) {
		ctx := context.Background()
		_, err := repo.Create(ctx, workspace.NewWorkspace(workspace.Spec{SessionID: 1, GitRoot: "/r"}, "node-a", "/w/1"))
		require.NoError(t, err)
		const writers = 12
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				_, err := repo.Update(ctx, 1, func(w *workspace.Workspace) error {
					w.Branch += "x"
					return nil
				})
				require.NoError(t, err)
			})
		}
		wg.Wait()
		got, err := repo.Get(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, strings.Repeat("x", writers), got.Branch)
	})
}
