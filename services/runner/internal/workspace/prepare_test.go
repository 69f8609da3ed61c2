package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace/workspacetest"
)

// These tests clone real repositories made in t.TempDir() with the git on
// PATH, which the runner needs too: without it they fail, not skip.

const node = "node-a"

// gitIn runs git in dir for a test's own setup (workspace.GitSetup).
var gitIn = workspace.GitSetup

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// remote is a repository to clone: main (README.md, services/api, a link
// to services/api and links out of the repository), branch feature on top
// of it (feature.txt, services/feature-only) and tag v1 on main.
type remote struct {
	path        string
	mainHead    string
	featureHead string
}

func newRemote(t *testing.T) remote {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "init", "--quiet", "--initial-branch=main")
	writeFile(t, filepath.Join(dir, "README.md"), "hello\n")
	writeFile(t, filepath.Join(dir, "services", "api", "main.go"), "package main\n")
	require.NoError(t, os.Symlink("services/api", filepath.Join(dir, "api")))
	require.NoError(t, os.Symlink("..", filepath.Join(dir, "escape")))
	require.NoError(t, os.Symlink("/", filepath.Join(dir, "outside")))
	gitIn(t, dir, "add", "--all")
	gitIn(t, dir, "commit", "--quiet", "--message=first")
	gitIn(t, dir, "tag", "v1")
	r := remote{path: dir, mainHead: gitIn(t, dir, "rev-parse", "HEAD")}
	gitIn(t, dir, "checkout", "--quiet", "-b", "feature")
	writeFile(t, filepath.Join(dir, "feature.txt"), "feature\n")
	writeFile(t, filepath.Join(dir, "services", "feature-only", "x.txt"), "x\n")
	gitIn(t, dir, "add", "--all")
	gitIn(t, dir, "commit", "--quiet", "--message=feature")
	r.featureHead = gitIn(t, dir, "rev-parse", "HEAD")
	gitIn(t, dir, "checkout", "--quiet", "main")
	return r
}

type testBundle struct {
	preparer *workspace.Preparer
	repo     workspace.Repository
	dir      string
}

func setup(t *testing.T, repo workspace.Repository, edit ...func(*workspace.Options)) testBundle {
	t.Helper()
	opts := workspace.Options{Node: node, Dir: t.TempDir()}
	for _, e := range edit {
		e(&opts)
	}
	p, err := workspace.NewPreparer(repo, opts)
	require.NoError(t, err)
	return testBundle{preparer: p, repo: repo, dir: opts.Dir}
}

// repositories run a test against the fake and the workspaces table.
var repositories = map[string]func(t *testing.T) workspace.Repository{
	"fake":     func(*testing.T) workspace.Repository { return workspacetest.NewMemory() },
	"postgres": func(t *testing.T) workspace.Repository { return store.NewWorkspaces(pgtest.DB(t, store.Migrations)) },
}

func forEachRepository(t *testing.T, test func(t *testing.T, b testBundle)) {
	t.Helper()
	for name, newRepo := range repositories {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, setup(t, newRepo(t)))
		})
	}
}

func (b testBundle) prepare(t *testing.T, spec workspace.Spec) workspace.Workspace {
	t.Helper()
	w, err := b.preparer.Prepare(context.Background(), spec)
	require.NoError(t, err)
	return w
}

// requirePrepareError requires err to be a *PrepareError of kind, retryable
// or not, whose reason holds each of says; it returns the reason.
func requirePrepareError(t *testing.T, err error, kind error, retryable bool, says ...string) string {
	t.Helper()
	var perr *workspace.PrepareError
	require.ErrorAs(t, err, &perr)
	require.ErrorIs(t, err, kind)
	require.Equal(t, retryable, perr.Retryable, "retryable; reason: %s", perr.Reason)
	for _, s := range says {
		require.Contains(t, perr.Reason, s)
	}
	return perr.Reason
}

// requireNothingOnDisk requires that neither the session's directory nor
// its staging directory exists.
func (b testBundle) requireNothingOnDisk(t *testing.T, id int64) {
	t.Helper()
	for _, path := range []string{b.preparer.Path(id), filepath.Join(b.dir, ".staging", strconv.FormatInt(id, 10))} {
		_, err := os.Lstat(path)
		require.ErrorIs(t, err, os.ErrNotExist, "%s must not exist", path)
	}
}

// requireFailed requires the session's row to be failed with reason.
func (b testBundle) requireFailed(t *testing.T, id int64, reason string) {
	t.Helper()
	w, err := b.repo.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, workspace.Failed, w.State)
	require.Equal(t, reason, w.FailureReason)
}

func TestPrepareClonesTheDefaultBranch(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	forEachRepository(t, func(t *testing.T, b testBundle) {
		for id, root := range map[int64]string{1: r.path, 2: "file://" + r.path} {
			w := b.prepare(t, workspace.Spec{SessionID: id, GitRoot: root})
			require.Equal(t, workspace.Ready, w.State)
			require.Equal(t, node, w.Node)
			require.Equal(t, filepath.Join(b.dir, strconv.FormatInt(id, 10)), w.Path)
			require.Equal(t, w.Path, w.Workdir())
			require.Equal(t, root, w.GitRoot)
			require.Empty(t, w.Branch)
			require.Equal(t, "main", w.CheckedOutBranch)
			require.Equal(t, r.mainHead, w.BaseCommit)
			require.FileExists(t, filepath.Join(w.Path, "README.md"))
			require.NoFileExists(t, filepath.Join(w.Path, "feature.txt"))
			stored, err := b.repo.Get(context.Background(), id)
			require.NoError(t, err)
			require.Equal(t, w, stored)
		}
		entries, err := os.ReadDir(filepath.Join(b.dir, ".staging"))
		require.NoError(t, err)
		require.Empty(t, entries, "staging is empty once the clones are in place")
	})
}

func TestPrepareClonesANamedBranchOrTag(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	b := setup(t, workspacetest.NewMemory())
	w := b.prepare(t, workspace.Spec{SessionID: 1, GitRoot: r.path, Branch: "feature", Subdirectory: "services/feature-only"})
	require.Equal(t, "feature", w.CheckedOutBranch)
	require.Equal(t, r.featureHead, w.BaseCommit)
	require.Equal(t, filepath.Join(w.Path, "services", "feature-only"), w.Workdir())
	require.FileExists(t, filepath.Join(w.Workdir(), "x.txt"))
	require.Equal(t, r.featureHead, gitIn(t, w.Path, "rev-parse", "HEAD"))

	tag := b.prepare(t, workspace.Spec{SessionID: 2, GitRoot: r.path, Branch: "v1"})
	require.Empty(t, tag.CheckedOutBranch, "a tag is checked out detached")
	require.Equal(t, r.mainHead, tag.BaseCommit)
}

func TestPrepareWorksInTheSubdirectory(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	b := setup(t, workspacetest.NewMemory())
	w := b.prepare(t, workspace.Spec{SessionID: 1, GitRoot: r.path, Subdirectory: "services/api"})
	require.Equal(t, filepath.Join(w.Path, "services", "api"), w.Workdir())
	require.FileExists(t, filepath.Join(w.Workdir(), "main.go"))

	linked := b.prepare(t, workspace.Spec{SessionID: 2, GitRoot: r.path, Subdirectory: "api"})
	require.FileExists(t, filepath.Join(linked.Workdir(), "main.go"), "a link that stays inside the clone is fine")
}

func TestPrepareRefusesAnUnusableSubdirectory(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	tests := []struct {
		subdirectory, branch, says string
	}{
		{"nope", "", `subdirectory "nope" does not exist in the clone of ` + r.path + ` (the remote's default branch)`},
		{"services/feature-only", "", "does not exist"},
		{"README.md", "", "is a file, not a directory"},
		{"escape", "", "leads out of the clone through a symbolic link"},
		{"outside/tmp", "feature", "leads out of the clone through a symbolic link"},
	}
	for i, tc := range tests {
		t.Run(tc.subdirectory, func(t *testing.T) {
			t.Parallel()
			b := setup(t, workspacetest.NewMemory())
			id := int64(i + 1)
			_, err := b.preparer.Prepare(context.Background(), workspace.Spec{SessionID: id, GitRoot: r.path, Branch: tc.branch, Subdirectory: tc.subdirectory})
			reason := requirePrepareError(t, err, workspace.ErrSubdirectoryUnusable, false, tc.says,
				"check that it is a directory committed on that branch", "then restart the session")
			b.requireNothingOnDisk(t, id)
			b.requireFailed(t, id, reason)
		})
	}
}

func TestPrepareRefusesBeforeGitRuns(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	git, clones := countingGit(t, "0")
	b := setup(t, workspacetest.NewMemory(), func(o *workspace.Options) { o.Git = git })
	for i, spec := range []workspace.Spec{
		{GitRoot: "--upload-pack=touch /tmp/zimmer-owned"},
		{GitRoot: "relative/repo"},
		{GitRoot: r.path, Branch: "--template=/tmp"},
		{GitRoot: r.path, Subdirectory: "../.."},
		{GitRoot: r.path, Subdirectory: "/etc"},
	} {
		spec.SessionID = int64(i + 1)
		_, err := b.preparer.Prepare(context.Background(), spec)
		requirePrepareError(t, err, workspace.ErrInvalidSpec, false, "create the session again with a valid one")
		_, err = b.repo.Get(context.Background(), spec.SessionID)
		require.ErrorIs(t, err, workspace.ErrNotFound, "a refused request records nothing")
		b.requireNothingOnDisk(t, spec.SessionID)
	}
	require.Zero(t, clones(), "git never ran")
}

// TestPrepareRefusesAGitRootInZimmersOwnData: issue 20 item 9 — a git_root
// naming another session's clone under the workspaces folder (directly, as
// a file:// URL, through a link, or in the preservation folder) was cloned,
// handing any creator another session's committed work. It is refused
// before git runs, saying which folder.
func TestPrepareRefusesAGitRootInZimmersOwnData(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	preserved := t.TempDir()
	git, clones := countingGit(t, "0")
	b := setup(t, workspacetest.NewMemory(), func(o *workspace.Options) { o.Git, o.DataDirs = git, []string{preserved} })
	victim := b.prepare(t, workspace.Spec{SessionID: 1, GitRoot: r.path})
	require.Equal(t, 1, clones())
	link := filepath.Join(t.TempDir(), "innocent")
	require.NoError(t, os.Symlink(victim.Path, link))
	writeFile(t, filepath.Join(preserved, "1", "x.txt"), "x\n")

	for i, root := range []string{
		victim.Path,
		victim.Path + "/.git",
		"file://" + victim.Path,
		"file://" + filepath.Dir(victim.Path) + "/%31", // percent-decoded, as git does
		b.dir,
		link,
		filepath.Join(b.dir, "..", filepath.Base(b.dir), "1"),
		filepath.Join(preserved, "1"),
	} {
		id := int64(i + 2)
		_, err := b.preparer.Prepare(context.Background(), workspace.Spec{SessionID: id, GitRoot: root})
		requirePrepareError(t, err, workspace.ErrInvalidSpec, false, "own data folder", "create the session again with a valid one")
		b.requireNothingOnDisk(t, id)
	}
	require.Equal(t, 1, clones(), "git never ran for a refused git_root")

	// A repository beside the data folder, not in it, is cloned.
	b.prepare(t, workspace.Spec{SessionID: 99, GitRoot: "file://" + r.path})
}

func TestPrepareReportsWhatGitSaid(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	missing := filepath.Join(t.TempDir(), "no-such-repo")
	tests := []struct {
		name      string
		spec      workspace.Spec
		retryable bool
		says      []string
		never     string
	}{
		{
			name: "an unknown repository",
			spec: workspace.Spec{GitRoot: missing},
			says: []string{
				"git could not clone " + missing + " (the remote's default branch): fatal: repository '" + missing + "' does not exist. " +
					`Check that git_root is reachable from runner node "node-a" and that the branch exists; then restart the session`,
			},
		},
		{
			name: "an unknown branch",
			spec: workspace.Spec{GitRoot: r.path, Branch: "nope"},
			says: []string{
				"git could not clone " + r.path + ` at branch "nope": fatal: Remote branch nope not found in upstream origin. `,
				"then restart the session",
			},
		},
		{
			name:      "a server that refuses, with credentials in the URL",
			spec:      workspace.Spec{GitRoot: "https://bot:s3cret@127.0.0.1:1/repo.git"},
			retryable: true,
			says:      []string{"git could not clone https://***@127.0.0.1:1/repo.git", "127.0.0.1", "then restart the session"},
			never:     "s3cret",
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, workspacetest.NewMemory())
			id := int64(i + 1)
			tc.spec.SessionID = id
			_, err := b.preparer.Prepare(context.Background(), tc.spec)
			reason := requirePrepareError(t, err, workspace.ErrCloneFailed, tc.retryable, tc.says...)
			if tc.never != "" {
				require.NotContains(t, reason, tc.never)
			}
			b.requireNothingOnDisk(t, id)
			b.requireFailed(t, id, reason)
		})
	}
}

func TestPrepareReportsAMissingGit(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	b := setup(t, workspacetest.NewMemory(), func(o *workspace.Options) { o.Git = "/nonexistent/bin/git" })
	_, err := b.preparer.Prepare(context.Background(), workspace.Spec{SessionID: 1, GitRoot: r.path})
	reason := requirePrepareError(t, err, workspace.ErrNodeTrouble, true, `git cannot run on runner node "node-a"`, "install git there")
	b.requireFailed(t, 1, reason)
}

func TestPrepareIsIdempotent(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	forEachRepository(t, func(t *testing.T, b testBundle) {
		git, clones := countingGit(t, "0")
		b = setup(t, b.repo, func(o *workspace.Options) { o.Git = git })
		spec := workspace.Spec{SessionID: 1, GitRoot: r.path, Subdirectory: "services/api"}
		first := b.prepare(t, spec)
		before := clones()
		// The agent's work in the clone must survive a retried Prepare.
		writeFile(t, filepath.Join(first.Workdir(), "work.txt"), "uncommitted\n")
		again := b.prepare(t, spec)
		require.Equal(t, first, again, "a ready workspace is returned as it is, not remade")
		require.FileExists(t, filepath.Join(again.Workdir(), "work.txt"))
		require.Equal(t, before, clones(), "no second clone")
	})
}

func TestPrepareRedoesACrashLeftover(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, b testBundle) {
		r := newRemote(t) // its own: the test adds a branch
		ctx := context.Background()
		spec := workspace.Spec{SessionID: 1, GitRoot: r.path}
		// A runner died mid-clone: the row says provisioning, half a clone
		// is in staging and something is already at the final path.
		_, err := b.repo.Create(ctx, workspace.NewWorkspace(spec, node, b.preparer.Path(1)))
		require.NoError(t, err)
		writeFile(t, filepath.Join(b.dir, ".staging", "1", ".git", "HEAD"), "ref: refs/heads/half\n")
		writeFile(t, filepath.Join(b.preparer.Path(1), "half.txt"), "half\n")

		w := b.prepare(t, spec)
		require.Equal(t, workspace.Ready, w.State)
		require.Equal(t, r.mainHead, w.BaseCommit)
		require.FileExists(t, filepath.Join(w.Path, "README.md"))
		require.NoFileExists(t, filepath.Join(w.Path, "half.txt"), "the leftover is gone")
		require.NoDirExists(t, filepath.Join(b.dir, ".staging", "1"))

		// A failed attempt is retried the same way.
		failedSpec := workspace.Spec{SessionID: 2, GitRoot: r.path, Branch: "nope"}
		_, err = b.preparer.Prepare(ctx, failedSpec)
		requirePrepareError(t, err, workspace.ErrCloneFailed, false)
		gitIn(t, r.path, "branch", "nope")
		w = b.prepare(t, failedSpec)
		require.Equal(t, workspace.Ready, w.State)
		require.Empty(t, w.FailureReason)
		require.Equal(t, "nope", w.CheckedOutBranch)
	})
}

func TestConcurrentPreparesCloneOnce(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	forEachRepository(t, func(t *testing.T, b testBundle) {
		git, clones := countingGit(t, "0.3")
		b = setup(t, b.repo, func(o *workspace.Options) { o.Git = git })
		spec := workspace.Spec{SessionID: 1, GitRoot: r.path}
		const callers = 6
		got := make([]workspace.Workspace, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				w, err := b.preparer.Prepare(context.Background(), spec)
				require.NoError(t, err)
				got[i] = w
			})
		}
		wg.Wait()
		require.Equal(t, 1, clones(), "one clone for %d prepares", callers)
		for _, w := range got {
			require.Equal(t, got[0], w)
		}
		require.Equal(t, workspace.Ready, got[0].State)
	})
}

func TestPrepareWaitsForTheOneHoldingTheLock(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	b := setup(t, workspacetest.NewMemory())
	// Another process preparing session 1: it holds the flock.
	require.NoError(t, os.MkdirAll(filepath.Join(b.dir, ".locks"), 0o700))
	held, err := os.OpenFile(filepath.Join(b.dir, ".locks", "1.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(held.Fd()), syscall.LOCK_EX))

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = b.preparer.Prepare(ctx, workspace.Spec{SessionID: 1, GitRoot: r.path})
	require.ErrorIs(t, err, context.DeadlineExceeded, "it waits, as long as ctx lets it")
	var perr *workspace.PrepareError
	require.False(t, errors.As(err, &perr), "waiting out a deadline is not the session's failure")

	require.NoError(t, held.Close()) // the holder ends (or dies)
	w := b.prepare(t, workspace.Spec{SessionID: 1, GitRoot: r.path})
	require.Equal(t, workspace.Ready, w.State)
}

func TestPrepareStopsGitAndItsChildrenWithTheContext(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	git := filepath.Join(dir, "git")
	// A clone that hangs in a child of git, as ssh or a remote helper would.
	writeFile(t, git, fmt.Sprintf("#!/bin/sh\nsleep 60 &\necho $! > '%s'\nwait\n", pidFile))
	require.NoError(t, os.Chmod(git, 0o755))
	b := setup(t, workspacetest.NewMemory(), func(o *workspace.Options) { o.Git = git })

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.preparer.Prepare(ctx, workspace.Spec{SessionID: 1, GitRoot: r.path})
	require.Less(t, time.Since(start), 5*time.Second)
	reason := requirePrepareError(t, err, workspace.ErrCloneFailed, true, "did not finish in the time allowed", "then restart the session")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	b.requireNothingOnDisk(t, 1)
	b.requireFailed(t, 1, reason)

	raw, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !running(pid) }, 3*time.Second, 20*time.Millisecond,
		"git's child %d outlived the kill", pid)
}

func TestPrepareChecksAReadyWorkspace(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	ctx := context.Background()
	spec := workspace.Spec{SessionID: 1, GitRoot: r.path, Subdirectory: "services/api"}

	t.Run("its clone gone", func(t *testing.T) {
		t.Parallel()
		b := setup(t, workspacetest.NewMemory())
		w := b.prepare(t, spec)
		require.NoError(t, os.RemoveAll(w.Path))
		_, err := b.preparer.Prepare(ctx, spec)
		requirePrepareError(t, err, workspace.ErrCloneMissing, true, "is missing from runner node", "if its volume is not mounted")
		require.NoDirExists(t, w.Path, "a ready clone is never remade behind the session's back")
	})
	t.Run("its subdirectory gone", func(t *testing.T) {
		t.Parallel()
		b := setup(t, workspacetest.NewMemory())
		w := b.prepare(t, spec)
		require.NoError(t, os.RemoveAll(w.Workdir()))
		_, err := b.preparer.Prepare(ctx, spec)
		requirePrepareError(t, err, workspace.ErrSubdirectoryUnusable, false, `subdirectory "services/api" of the session's clone`, "restore it there")
	})
	t.Run("another request", func(t *testing.T) {
		t.Parallel()
		b := setup(t, workspacetest.NewMemory())
		b.prepare(t, spec)
		other := spec
		other.Branch = "feature"
		_, err := b.preparer.Prepare(ctx, other)
		requirePrepareError(t, err, workspace.ErrSpecMismatch, false, "create a new session for it")
	})
	t.Run("on another node", func(t *testing.T) {
		t.Parallel()
		repo := workspacetest.NewMemory()
		setup(t, repo).prepare(t, spec)
		b := setup(t, repo, func(o *workspace.Options) { o.Node = "node-b" })
		_, err := b.preparer.Prepare(ctx, spec)
		requirePrepareError(t, err, workspace.ErrOtherNode, false, `on runner node "node-a", not on "node-b"`)
		b.requireNothingOnDisk(t, 1)
	})
	t.Run("archived", func(t *testing.T) {
		t.Parallel()
		b := setup(t, workspacetest.NewMemory())
		b.prepare(t, spec)
		_, err := b.repo.Update(ctx, 1, func(w *workspace.Workspace) error {
			w.State = workspace.Retained
			return nil
		})
		require.NoError(t, err)
		_, err = b.preparer.Prepare(ctx, spec)
		requirePrepareError(t, err, workspace.ErrNotPreparable, false, "workspace is retained", "unarchive it")
	})
}

func TestPrepareClonesAnEmptyRepository(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	gitIn(t, empty, "init", "--quiet", "--initial-branch=main")
	b := setup(t, workspacetest.NewMemory())
	w := b.prepare(t, workspace.Spec{SessionID: 1, GitRoot: empty})
	require.Equal(t, workspace.Ready, w.State)
	require.Empty(t, w.BaseCommit, "no commit yet")
	require.DirExists(t, filepath.Join(w.Path, ".git"))
}

func TestNewPreparerNeedsANodeAndAnAbsoluteDir(t *testing.T) {
	t.Parallel()
	_, err := workspace.NewPreparer(workspacetest.NewMemory(), workspace.Options{Dir: "/w"})
	require.Error(t, err)
	_, err = workspace.NewPreparer(workspacetest.NewMemory(), workspace.Options{Node: node, Dir: "w"})
	require.Error(t, err)
}

// countingGit is a git that records each clone (and waits delay seconds
// before it, so concurrent ones overlap) before running the real one; the
// function returned counts the clones so far.
func countingGit(t *testing.T, delay string) (path string, clones func() int) {
	t.Helper()
	real, err := exec.LookPath("git")
	require.NoError(t, err, "git must be on PATH")
	dir := t.TempDir()
	log, path := filepath.Join(dir, "clones.log"), filepath.Join(dir, "git")
	writeFile(t, path, fmt.Sprintf(`#!/bin/sh
for a in "$@"; do
  if [ "$a" = clone ]; then echo clone >> '%s'; sleep %s; break; fi
done
exec '%s' "$@"
`, log, delay, real))
	require.NoError(t, os.Chmod(path, 0o755))
	return path, func() int {
		raw, err := os.ReadFile(log)
		if errors.Is(err, os.ErrNotExist) {
			return 0
		}
		require.NoError(t, err)
		return strings.Count(string(raw), "clone\n")
	}
}

// running says whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state …; comm may hold spaces, so read after the last ')'.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
