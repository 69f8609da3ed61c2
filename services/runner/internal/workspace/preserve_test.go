package workspace_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace/workspacetest"
)

// These tests archive and unarchive real clones of repositories made in
// t.TempDir() with the git on PATH.

var deadline = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// yes and no are a session's status as the Keeper asks it.
func yes(context.Context) (bool, error) { return true, nil }
func no(context.Context) (bool, error)  { return false, nil }

type keeperBundle struct {
	testBundle
	keeper *workspace.Keeper
	store  string
	remote remote
}

func setupKeeper(t *testing.T, repo workspace.Repository, edit ...func(*workspace.Options)) keeperBundle {
	t.Helper()
	b := setup(t, repo, edit...)
	store := filepath.Join(b.dir, ".preserved")
	k, err := workspace.NewKeeper(b.preparer, store)
	require.NoError(t, err)
	return keeperBundle{testBundle: b, keeper: k, store: store, remote: newRemote(t)}
}

// clone prepares session id's clone of the remote's main branch.
func (b keeperBundle) clone(t *testing.T, id int64) workspace.Workspace {
	t.Helper()
	return b.prepare(t, workspace.Spec{SessionID: id, GitRoot: b.remote.path, Branch: "main"})
}

// snapshot is a working tree file by file, .git left out: each file's
// mode and bytes, each link's target. Two equal snapshots are the same
// tree byte for byte.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, path)
		if rel == ".git" {
			return filepath.SkipDir
		}
		info, err := d.Info()
		require.NoError(t, err)
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			require.NoError(t, err)
			files[rel] = "link → " + target
		case info.Mode().IsRegular():
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			files[rel] = fmt.Sprintf("%v %q", info.Mode().Perm()&0o100 != 0, data)
		}
		return nil
	}))
	return files
}

// work gives a clone the kinds of unpushed work a session leaves: two
// commits on main, a local branch of its own, a staged change, a change
// and a deletion not staged, an executable script, and untracked files, one
// of them binary.
func work(t *testing.T, clone string) (binary []byte) {
	t.Helper()
	writeFile(t, filepath.Join(clone, "one.txt"), "one\n")
	gitIn(t, clone, "add", "one.txt")
	gitIn(t, clone, "commit", "--quiet", "--message=one")
	writeFile(t, filepath.Join(clone, "README.md"), "hello\nagain\n")
	gitIn(t, clone, "commit", "--quiet", "--all", "--message=two")
	gitIn(t, clone, "branch", "experiment")
	gitIn(t, clone, "checkout", "--quiet", "experiment")
	writeFile(t, filepath.Join(clone, "experiment.txt"), "only here\n")
	gitIn(t, clone, "add", "experiment.txt")
	gitIn(t, clone, "commit", "--quiet", "--message=experiment")
	gitIn(t, clone, "checkout", "--quiet", "main")

	writeFile(t, filepath.Join(clone, "staged.txt"), "staged\n")
	gitIn(t, clone, "add", "staged.txt")
	writeFile(t, filepath.Join(clone, "one.txt"), "one, changed\n")
	require.NoError(t, os.Remove(filepath.Join(clone, "services", "api", "main.go")))
	writeFile(t, filepath.Join(clone, "run.sh"), "#!/bin/sh\necho hi\n")
	require.NoError(t, os.Chmod(filepath.Join(clone, "run.sh"), 0o755))
	binary = make([]byte, 4096)
	_, _ = rand.Read(binary)
	binary[0], binary[100] = 0, 0
	require.NoError(t, os.MkdirAll(filepath.Join(clone, "assets", "new"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(clone, "assets", "new", "blob.bin"), binary, 0o644))
	writeFile(t, filepath.Join(clone, "notes", "todo.md"), "untracked\n")
	return binary
}

func TestPreserveDeletesACleanClone(t *testing.T) {
	t.Parallel()
	forEachKeeper(t, func(t *testing.T, b keeperBundle) {
		w := b.clone(t, 1)
		res, err := b.keeper.Preserve(context.Background(), 1, deadline, yes)
		require.NoError(t, err)
		require.Equal(t, workspace.OutcomeDeleted, res.Outcome, res.Detail)
		require.Equal(t, workspace.Reaped, res.Workspace.State)
		require.Nil(t, res.Workspace.Archive.TrashAfter, "nothing is kept for the trash")
		require.NoDirExists(t, w.Path)
		require.NoDirExists(t, b.keeper.ArtifactsDir(1))

		// Unarchive makes it again where the session's turns look for it.
		res, err = b.keeper.Restore(context.Background(), 1, yes)
		require.NoError(t, err)
		require.Equal(t, workspace.OutcomeRestored, res.Outcome, res.Detail)
		require.Equal(t, workspace.Ready, res.Workspace.State)
		require.Equal(t, w.Path, res.Workspace.Path)
		require.Equal(t, snapshot(t, b.remote.path), snapshot(t, w.Path))
		again := b.prepare(t, w.Spec())
		require.Equal(t, w.Path, again.Path, "the next turn's Prepare finds it ready where it was")
	})
}

func forEachKeeper(t *testing.T, test func(t *testing.T, b keeperBundle)) {
	t.Helper()
	for name, newRepo := range repositories {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, setupKeeper(t, newRepo(t)))
		})
	}
}

// TestPreserveKeepsUnpushedWorkAndUnarchiveRestoresItByteForByte is the
// whole round: a dirty clone's commits on no remote-tracking branch go
// into a bundle and its uncommitted and untracked changes (a binary file
// among them) into a binary diff; the clone is deleted; unarchive clones
// again and applies both, and the tree, HEAD, branch and the local-only
// branch are what they were.
func TestPreserveKeepsUnpushedWorkAndUnarchiveRestoresItByteForByte(t *testing.T) {
	t.Parallel()
	forEachKeeper(t, func(t *testing.T, b keeperBundle) {
		ctx := context.Background()
		w := b.clone(t, 1)
		binary := work(t, w.Path)
		before := snapshot(t, w.Path)
		head := gitIn(t, w.Path, "rev-parse", "HEAD")
		experiment := gitIn(t, w.Path, "rev-parse", "experiment")
		// The remote moves on meanwhile: the restore still gives back the
		// session's own main.
		writeFile(t, filepath.Join(b.remote.path, "later.txt"), "later\n")
		gitIn(t, b.remote.path, "add", "later.txt")
		gitIn(t, b.remote.path, "commit", "--quiet", "--message=later")

		res, err := b.keeper.Preserve(ctx, 1, deadline, yes)
		require.NoError(t, err)
		require.Equal(t, workspace.OutcomePreserved, res.Outcome, res.Detail)
		require.Equal(t, workspace.Preserved, res.Workspace.State)
		require.NoDirExists(t, w.Path)
		a := res.Workspace.Archive.Artifacts
		require.Equal(t, &deadline, res.Workspace.Archive.TrashAfter)
		require.Equal(t, b.keeper.ArtifactsDir(1), a.Dir)
		require.Equal(t, filepath.Join(a.Dir, workspace.BundleFile), a.Bundle)
		require.Equal(t, filepath.Join(a.Dir, workspace.PatchFile), a.Patch)
		require.FileExists(t, filepath.Join(a.Dir, workspace.MetadataFile))
		for path, size := range map[string]int64{a.Bundle: a.BundleBytes, a.Patch: a.PatchBytes} {
			info, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, info.Size(), size)
			require.Positive(t, size)
		}
		require.Equal(t, head, a.Head)
		require.Equal(t, "main", a.Branch)
		require.Contains(t, res.Detail, "3 commits not on any remote-tracking branch")
		require.Contains(t, res.Detail, a.Dir)
		stored, err := b.repo.Get(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, res.Workspace, stored)

		res, err = b.keeper.Restore(ctx, 1, yes)
		require.NoError(t, err)
		require.Equal(t, workspace.OutcomeRestored, res.Outcome, res.Detail)
		require.Equal(t, w.Path, res.Workspace.Path)
		require.Equal(t, before, snapshot(t, w.Path), "the restored tree is the preserved one, file by file")
		got, err := os.ReadFile(filepath.Join(w.Path, "assets", "new", "blob.bin"))
		require.NoError(t, err)
		require.Equal(t, binary, got)
		require.Equal(t, head, gitIn(t, w.Path, "rev-parse", "HEAD"))
		require.Equal(t, "main", gitIn(t, w.Path, "symbolic-ref", "--short", "HEAD"))
		require.Equal(t, experiment, gitIn(t, w.Path, "rev-parse", "experiment"))
		require.NotContains(t, gitIn(t, w.Path, "for-each-ref"), "preserved-head")
		require.NoDirExists(t, a.Dir, "applied and recorded, the artifacts are gone")
		require.Equal(t, workspace.Archive{Note: res.Detail}, res.Workspace.Archive)
		require.Equal(t, w.Spec(), b.prepare(t, w.Spec()).Spec(), "the next turn's Prepare finds it ready")
	})
}

// TestPreserveNeverTouchesTheClonesIndex: the working tree is read through
// a scratch index, and an unarchive between extraction and deletion stands
// the deletion down: the clone is as it was, index included, and nothing
// is left in the store.
func TestPreserveNeverTouchesTheClonesIndex(t *testing.T) {
	t.Parallel()
	b := setupKeeper(t, workspacetest.NewMemory())
	w := b.clone(t, 1)
	work(t, w.Path)
	index, err := os.ReadFile(filepath.Join(w.Path, ".git", "index"))
	require.NoError(t, err)
	status := gitIn(t, w.Path, "status", "--porcelain")
	before := snapshot(t, w.Path)

	asked := 0
	unarchivedDuringExtraction := func(context.Context) (bool, error) { asked++; return asked == 1, nil }
	res, err := b.keeper.Preserve(context.Background(), 1, deadline, unarchivedDuringExtraction)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeStoodDown, res.Outcome)
	require.Equal(t, 2, asked, "asked before starting and again right before deleting")
	after, err := os.ReadFile(filepath.Join(w.Path, ".git", "index"))
	require.NoError(t, err)
	require.Equal(t, index, after)
	require.Equal(t, status, gitIn(t, w.Path, "status", "--porcelain"))
	require.Equal(t, before, snapshot(t, w.Path))
	got, err := b.repo.Get(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, workspace.Ready, got.State)
	require.NoDirExists(t, b.keeper.ArtifactsDir(1))
}

func TestPreserveStandsDownForASessionNoLongerArchived(t *testing.T) {
	t.Parallel()
	b := setupKeeper(t, workspacetest.NewMemory())
	w := b.clone(t, 1)
	res, err := b.keeper.Preserve(context.Background(), 1, deadline, no)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeStoodDown, res.Outcome)
	require.DirExists(t, w.Path)

	res, err = b.keeper.Preserve(context.Background(), 1, deadline, func(context.Context) (bool, error) {
		return false, errors.New("lifecycle unreachable")
	})
	require.ErrorContains(t, err, "lifecycle unreachable")
	require.DirExists(t, w.Path)
}

// TestPreserveKeepsAMangledCloneWhole: 60 deleted tracked files and one
// change is an interrupted delete, not work: the clone is kept on disk
// until the deadline, and unarchive brings the deleted files back from
// HEAD while keeping the change.
func TestPreserveKeepsAMangledCloneWhole(t *testing.T) {
	t.Parallel()
	b := setupKeeper(t, workspacetest.NewMemory())
	for i := range 60 {
		writeFile(t, filepath.Join(b.remote.path, "many", fmt.Sprintf("f%02d.txt", i)), fmt.Sprint(i))
	}
	gitIn(t, b.remote.path, "add", "many")
	gitIn(t, b.remote.path, "commit", "--quiet", "--message=many")
	w := b.clone(t, 1)
	pristine := snapshot(t, w.Path)
	require.NoError(t, os.RemoveAll(filepath.Join(w.Path, "many")))
	writeFile(t, filepath.Join(w.Path, "README.md"), "real work\n")

	res, err := b.keeper.Preserve(context.Background(), 1, deadline, yes)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeMangled, res.Outcome, res.Detail)
	require.Equal(t, workspace.Retained, res.Workspace.State)
	require.Equal(t, 60, res.Workspace.Archive.DroppedDeletions)
	require.Equal(t, &deadline, res.Workspace.Archive.TrashAfter)
	require.Positive(t, res.Workspace.Archive.CloneBytes)
	require.False(t, res.Workspace.Archive.Artifacts.Kept())
	require.DirExists(t, w.Path)
	require.Contains(t, res.Detail, "deletes 60 tracked files and changes 1 others")

	res, err = b.keeper.Restore(context.Background(), 1, yes)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeRestored, res.Outcome, res.Detail)
	want := pristine
	want["README.md"] = fmt.Sprintf("%v %q", false, "real work\n")
	require.Equal(t, want, snapshot(t, w.Path))
	require.Contains(t, res.Detail, "60 tracked files it had deleted back from HEAD")
}

func TestMangledIsManyDeletionsAndAlmostNothingElse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		deleted, other int
		want           bool
	}{{49, 0, false}, {50, 0, true}, {50, 5, true}, {50, 6, false}, {200, 20, true}, {200, 21, false}, {0, 100, false}} {
		require.Equal(t, c.want, workspace.Mangled(c.deleted, c.other), "%d deleted, %d other", c.deleted, c.other)
	}
}

// TestPreserveRecordsAVanishedClone: a clone gone from disk is nothing to
// keep; the workspace is reaped and holds no deadline.
func TestPreserveRecordsAVanishedClone(t *testing.T) {
	t.Parallel()
	b := setupKeeper(t, workspacetest.NewMemory())
	w := b.clone(t, 1)
	require.NoError(t, os.RemoveAll(w.Path))
	res, err := b.keeper.Preserve(context.Background(), 1, deadline, yes)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeVanished, res.Outcome)
	require.Equal(t, workspace.Reaped, res.Workspace.State)
	require.Nil(t, res.Workspace.Archive.TrashAfter)
	require.Contains(t, res.Detail, "vanished")
}

// TestPreserveKeepsACloneWhoseWorkCannotBeExtracted: git failing on a clone
// that is still on disk — here git missing, whose ENOENT must not be taken
// for a vanished clone — keeps the clone whole until the deadline; an
// unarchive restores it as it stands.
func TestPreserveKeepsACloneWhoseWorkCannotBeExtracted(t *testing.T) {
	t.Parallel()
	repo := workspacetest.NewMemory()
	b := setupKeeper(t, repo)
	w := b.clone(t, 1)
	work(t, w.Path)
	before := snapshot(t, w.Path)
	broken, err := workspace.NewPreparer(repo, workspace.Options{Node: node, Dir: b.dir, Git: filepath.Join(t.TempDir(), "no-git")})
	require.NoError(t, err)
	keeper, err := workspace.NewKeeper(broken, b.store)
	require.NoError(t, err)

	res, err := keeper.Preserve(context.Background(), 1, deadline, yes)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeExtractionFailed, res.Outcome, res.Detail)
	require.Equal(t, workspace.Retained, res.Workspace.State)
	require.Equal(t, &deadline, res.Workspace.Archive.TrashAfter)
	require.Contains(t, res.Detail, "the clone is kept whole at "+w.Path)
	require.Equal(t, before, snapshot(t, w.Path))

	res, err = b.keeper.Restore(context.Background(), 1, yes)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeRestored, res.Outcome)
	require.Equal(t, workspace.Ready, res.Workspace.State)
	require.Equal(t, before, snapshot(t, w.Path))
}

// TestRestoreLeavesAPristineCloneWhenTheWorkCannotBeApplied: artifacts that
// no longer apply give the session a clone it can work in; the artifacts
// stay on disk, without a deadline, and the note says where.
func TestRestoreLeavesAPristineCloneWhenTheWorkCannotBeApplied(t *testing.T) {
	t.Parallel()
	b := setupKeeper(t, workspacetest.NewMemory())
	w := b.clone(t, 1)
	work(t, w.Path)
	res, err := b.keeper.Preserve(context.Background(), 1, deadline, yes)
	require.NoError(t, err)
	a := res.Workspace.Archive.Artifacts
	require.NoError(t, os.WriteFile(a.Patch, []byte("not a patch\n"), 0o600))

	res, err = b.keeper.Restore(context.Background(), 1, yes)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeRestoredPristine, res.Outcome, res.Detail)
	require.Equal(t, workspace.Ready, res.Workspace.State)
	require.Equal(t, a, res.Workspace.Archive.Artifacts)
	require.Nil(t, res.Workspace.Archive.TrashAfter)
	require.Contains(t, res.Detail, a.Dir)
	require.DirExists(t, a.Dir)
	require.Equal(t, snapshot(t, b.remote.path), snapshot(t, w.Path))
}

func TestRestoreStandsDownForASessionArchivedAgain(t *testing.T) {
	t.Parallel()
	b := setupKeeper(t, workspacetest.NewMemory())
	w := b.clone(t, 1)
	_, err := b.keeper.Preserve(context.Background(), 1, deadline, yes)
	require.NoError(t, err)
	res, err := b.keeper.Restore(context.Background(), 1, no)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeStoodDown, res.Outcome)
	require.NoDirExists(t, w.Path)

	res, err = b.keeper.Restore(context.Background(), 2, yes)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeNoClone, res.Outcome)
}

// TestReapDeletesWhatTheTrashKeptOnceDue: nothing before the deadline; at
// it, the artifacts (or the retained clone) are deleted and the workspace
// reaped; unarchive afterwards clones afresh.
func TestReapDeletesWhatTheTrashKeptOnceDue(t *testing.T) {
	t.Parallel()
	b := setupKeeper(t, workspacetest.NewMemory())
	ctx := context.Background()
	w := b.clone(t, 1)
	work(t, w.Path)
	res, err := b.keeper.Preserve(ctx, 1, deadline, yes)
	require.NoError(t, err)
	a := res.Workspace.Archive.Artifacts

	res, err = b.keeper.Reap(ctx, 1, deadline.Add(-time.Second))
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeUnchanged, res.Outcome)
	require.DirExists(t, a.Dir)
	res, err = b.keeper.Reap(ctx, 1, deadline)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeReaped, res.Outcome)
	require.Equal(t, workspace.Reaped, res.Workspace.State)
	require.NoDirExists(t, a.Dir)

	// A mangled clone retained on disk goes the same way.
	w2 := b.clone(t, 2)
	broken, err := workspace.NewPreparer(b.repo, workspace.Options{Node: node, Dir: b.dir, Git: filepath.Join(t.TempDir(), "no-git")})
	require.NoError(t, err)
	keeper, err := workspace.NewKeeper(broken, b.store)
	require.NoError(t, err)
	res, err = keeper.Preserve(ctx, 2, deadline, yes)
	require.NoError(t, err)
	require.Equal(t, workspace.Retained, res.Workspace.State)
	res, err = b.keeper.Reap(ctx, 2, deadline.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeReaped, res.Outcome)
	require.NoDirExists(t, w2.Path)

	res, err = b.keeper.Restore(ctx, 1, yes)
	require.NoError(t, err)
	require.Equal(t, workspace.OutcomeRestored, res.Outcome)
	require.Equal(t, snapshot(t, b.remote.path), snapshot(t, w.Path))
}

// TestKeeperRefusesAnotherNodesClone: the clone's disk is its node's.
func TestKeeperRefusesAnotherNodesClone(t *testing.T) {
	t.Parallel()
	repo := workspacetest.NewMemory()
	b := setupKeeper(t, repo)
	b.clone(t, 1)
	other, err := workspace.NewPreparer(repo, workspace.Options{Node: "node-b", Dir: t.TempDir()})
	require.NoError(t, err)
	keeper, err := workspace.NewKeeper(other, filepath.Join(t.TempDir(), "p"))
	require.NoError(t, err)
	_, err = keeper.Preserve(context.Background(), 1, deadline, yes)
	require.ErrorIs(t, err, workspace.ErrOtherNode)
}
