package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// A session whose node was declared dead gets its clone anew on a live
// node, which takes the workspace over; a node that was never dead keeps
// its own, and asking twice changes nothing.
func TestTakeOverMovesTheWorkspaceFromADeadNode(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	ctx := context.Background()
	spec := workspace.Spec{SessionID: 1, GitRoot: r.path}
	forEachRepository(t, func(t *testing.T, dead testBundle) {
		dead.prepare(t, spec)
		live := setup(t, dead.repo, func(o *workspace.Options) { o.Node = "node-b" })

		require.NoError(t, live.preparer.TakeOver(ctx, 1, "node-c"), "not the workspace's node: nothing to take over")
		_, err := live.preparer.Prepare(ctx, spec)
		requirePrepareError(t, err, workspace.ErrOtherNode, false, `on runner node "node-a"`)

		require.NoError(t, live.preparer.TakeOver(ctx, 1, "node-a"))
		require.NoError(t, live.preparer.TakeOver(ctx, 1, "node-a"), "a retried call is harmless")
		w := live.prepare(t, spec)
		require.Equal(t, "node-b", w.Node)
		require.Equal(t, workspace.Ready, w.State)
		require.Equal(t, filepath.Join(live.dir, "1"), w.Path)
		_, err = os.Stat(filepath.Join(w.Path, ".git"))
		require.NoError(t, err, "cloned anew on the live node")
	})
}

// A turn asked for right after an unarchive waits for the restore to give
// the clone back; a ready workspace whose clone is gone is an error at once.
func TestAwaitRestoreWaitsForTheCloneToComeBack(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	ctx := context.Background()
	spec := workspace.Spec{SessionID: 1, GitRoot: r.path}
	forEachRepository(t, func(t *testing.T, b testBundle) {
		w := b.prepare(t, spec)
		_, err := b.repo.Update(ctx, 1, func(w *workspace.Workspace) error {
			return w.Reap("a clean clone, deleted after its archive")
		})
		require.NoError(t, err)

		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, b.preparer.AwaitRestore(short, 1, 20*time.Millisecond), context.DeadlineExceeded,
			"still in the trash: it waits, bounded by its caller")

		time.AfterFunc(200*time.Millisecond, func() {
			_, _ = b.repo.Update(ctx, 1, func(w *workspace.Workspace) error {
				w.State = workspace.Ready
				return nil
			})
		})
		require.NoError(t, b.preparer.AwaitRestore(ctx, 1, 20*time.Millisecond), "given back: it goes on")

		require.NoError(t, os.RemoveAll(w.Path))
		require.ErrorIs(t, b.preparer.AwaitRestore(ctx, 1, 20*time.Millisecond), workspace.ErrCloneMissing)
	})
}
