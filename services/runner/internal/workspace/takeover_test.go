package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
