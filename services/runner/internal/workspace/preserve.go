package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MangledDeletions is the spec's threshold: a working tree that deletes
// this many tracked files and changes almost nothing else is not work but
// a clone an interrupted recursive delete gutted.
const MangledDeletions = 50

// Mangled says whether a working tree that deletes deleted tracked files
// and otherwise adds or changes other files is a mangled clone: at least
// MangledDeletions deletions and "almost nothing else", which is taken as
// other being at most a tenth of the deletions.
func Mangled(deleted, other int) bool {
	return deleted >= MangledDeletions && other*10 <= deleted
}

// Names of the files in a session's directory of the preservation store.
const (
	BundleFile   = "unpushed.bundle"
	PatchFile    = "working_tree.patch"
	MetadataFile = "preservation.json"
)

// Outcome is what Preserve, Restore or Reap did.
type Outcome string

// Outcomes.
const (
	// OutcomeNoClone: the session has no workspace (it never got a clone).
	OutcomeNoClone Outcome = "no_clone"
	// OutcomeStoodDown: the session's status no longer asks for it (an
	// unarchive before the deletion, an archive before the restore).
	OutcomeStoodDown Outcome = "stood_down"
	// OutcomeUnchanged: an earlier run (or another path) already did it, or
	// nothing is due.
	OutcomeUnchanged Outcome = "unchanged"
	// OutcomeDeleted: the clone was clean (nothing unpushed, nothing
	// uncommitted or untracked) and is deleted.
	OutcomeDeleted Outcome = "deleted"
	// OutcomePreserved: the clone's unpushed work is in the preservation
	// store and the clone is deleted.
	OutcomePreserved Outcome = "preserved"
	// OutcomeMangled: the clone is kept whole, its deletions not trusted.
	OutcomeMangled Outcome = "mangled"
	// OutcomeExtractionFailed: the work could not be extracted; the clone
	// is kept whole as its only copy, until the trash deadline.
	OutcomeExtractionFailed Outcome = "extraction_failed"
	// OutcomeVanished: the clone was gone from disk; nothing to keep.
	OutcomeVanished Outcome = "vanished"
	// OutcomeRestored: the clone is back, as it stood or cloned again with
	// the preserved work applied.
	OutcomeRestored Outcome = "restored"
	// OutcomeRestoredPristine: the clone is back, cloned again, but the
	// preserved work could not be applied; the artifacts stay on disk.
	OutcomeRestoredPristine Outcome = "restored_pristine"
	// OutcomeReaped: the trash deadline passed; what was kept is deleted.
	OutcomeReaped Outcome = "reaped"
)

// RetainsNothing reports whether, after a clean-up or a reaping with this
// outcome, nothing of the session is kept any more (its clone deleted
// clean, gone already, never made, or what the trash kept reaped at its
// deadline), so its trash deadline deadlines nothing. The per-session
// .state directory is rewritten by every turn and not on the trash
// schedule (RN-19), so it does not count.
func (o Outcome) RetainsNothing() bool {
	return o == OutcomeDeleted || o == OutcomeVanished || o == OutcomeNoClone || o == OutcomeReaped
}

// Result is what happened to a session's clone, in words too.
type Result struct {
	Outcome   Outcome
	Workspace Workspace
	// Detail says what happened, for logs and the session's detail.
	Detail string
}

// StatusCheck answers whether the session's status still asks for the
// work: still archived for Preserve, no longer archived for Restore. It is
// asked under the session's workspace lock immediately before the clone is
// deleted or remade, so an unarchive (or archive) that lands during the
// work is never undone by it.
type StatusCheck func(ctx context.Context) (bool, error)

// Keeper decides what becomes of a session's clone when the session is
// archived (Preserve), brings it back when it is unarchived (Restore), and
// deletes what the trash kept once its deadline passes (Reap). It works on
// the node's disk, under the same per-session lock as Prepare, so none of
// them ever runs beside another or beside a Prepare of the same session.
type Keeper struct {
	p *Preparer
	// store is the preservation store: <store>/<session id>/ holds a
	// session's artifacts.
	store string
}

// NewKeeper returns a Keeper for p's node keeping artifacts under
// preservationDir (absolute).
func NewKeeper(p *Preparer, preservationDir string) (*Keeper, error) {
	if !filepath.IsAbs(preservationDir) {
		return nil, fmt.Errorf("workspace keeper: preservation directory %q is not absolute", preservationDir)
	}
	return &Keeper{p: p, store: filepath.Clean(preservationDir)}, nil
}

// ArtifactsDir is where session id's artifacts are kept on this node.
func (k *Keeper) ArtifactsDir(id int64) string {
	return filepath.Join(k.store, strconv.FormatInt(id, 10))
}

// locked runs fn holding the session's workspace lock, with its workspace
// (ok false when it has none). A workspace on another node is an
// ErrOtherNode error: its disk is not this node's.
func (k *Keeper) locked(ctx context.Context, id int64, fn func(w Workspace) (Result, error)) (Result, error) {
	if err := os.MkdirAll(filepath.Dir(k.p.lockPath(0)), 0o700); err != nil {
		return Result{}, fmt.Errorf("create the workspaces' lock directory: %w", err)
	}
	unlock, err := k.p.lock(ctx, id)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	w, err := k.p.repo.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Result{Outcome: OutcomeNoClone, Detail: "the session has no clone"}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("read the workspace of session %d: %w", id, err)
	}
	if w.Node != k.p.node {
		return Result{}, fmt.Errorf("session %d's clone is on runner node %q, not %q: %w", id, w.Node, k.p.node, ErrOtherNode)
	}
	return fn(w)
}

// Preserve is the archive's deferred clean-up of session id's clone, after
// the undo window: a clean clone is deleted; a dirty one has its unpushed
// commits bundled and its uncommitted and untracked changes diffed into
// the preservation store, kept until trashAfter, and is then deleted; a
// mangled one is kept whole until trashAfter; one whose work cannot be
// extracted is kept whole until trashAfter (it is the only copy); one gone
// from disk is recorded reaped. archived is asked right before anything is
// deleted: false stands down, leaving the clone ready.
//
// Only a ready clone is acted on: any other state means an earlier run
// decided already (a retry finishes deleting a preserved clone it left).
// An error is the node's or the database's trouble, worth retrying.
func (k *Keeper) Preserve(ctx context.Context, id int64, trashAfter time.Time, archived StatusCheck) (Result, error) {
	return k.locked(ctx, id, func(w Workspace) (Result, error) {
		switch w.State {
		case Ready:
		case Preserved:
			// A run that recorded the artifacts died before deleting.
			if err := os.RemoveAll(w.Path); err != nil {
				return Result{}, fmt.Errorf("delete the preserved clone %s: %w", w.Path, err)
			}
			return Result{Outcome: OutcomeUnchanged, Workspace: w, Detail: "already preserved"}, nil
		default:
			return Result{Outcome: OutcomeUnchanged, Workspace: w, Detail: fmt.Sprintf("the workspace is %s", w.State)}, nil
		}
		if still, err := archived(ctx); err != nil || !still {
			return k.stoodDown(w, err)
		}
		if gone(w.Path) {
			return k.vanished(ctx, w)
		}
		found, err := k.inspect(ctx, w.Path)
		switch {
		case err != nil && gone(w.Path):
			return k.vanished(ctx, w)
		case err != nil:
			return k.retain(ctx, w, trashAfter, OutcomeExtractionFailed, 0, fmt.Sprintf(
				"preserving the clone's unpushed work failed (%v); the clone is kept whole at %s on runner node %q "+
					"as the only copy of that work until %s", err, w.Path, w.Node, trashAfter.UTC().Format(time.RFC3339)))
		case Mangled(found.deleted, found.other):
			return k.retain(ctx, w, trashAfter, OutcomeMangled, found.deleted, fmt.Sprintf(
				"the clone deletes %d tracked files and changes %d others: a mangled clone, not work; it is kept "+
					"whole at %s on runner node %q until %s, and an unarchive brings the deleted files back from HEAD",
				found.deleted, found.other, w.Path, w.Node, trashAfter.UTC().Format(time.RFC3339)))
		case found.clean():
			if still, err := archived(ctx); err != nil || !still {
				return k.stoodDown(w, err)
			}
			return k.reap(ctx, w, OutcomeDeleted, "the clone was clean (everything pushed, nothing uncommitted) and is deleted")
		}
		a, err := k.writeArtifacts(ctx, w, found)
		if err != nil {
			if gone(w.Path) {
				return k.vanished(ctx, w)
			}
			return k.retain(ctx, w, trashAfter, OutcomeExtractionFailed, 0, fmt.Sprintf(
				"writing the clone's unpushed work to the preservation store failed (%v); the clone is kept whole at %s "+
					"on runner node %q as the only copy of that work until %s", err, w.Path, w.Node,
				trashAfter.UTC().Format(time.RFC3339)))
		}
		if still, err := archived(ctx); err != nil || !still {
			_ = os.RemoveAll(a.Dir) // the clone still holds the work
			return k.stoodDown(w, err)
		}
		note := fmt.Sprintf("the clone's unpushed work (%d commits not on any remote-tracking branch; %s) is kept in %s "+
			"on runner node %q until %s; the clone is deleted", found.unpushed, patchWords(a), a.Dir, w.Node,
			trashAfter.UTC().Format(time.RFC3339))
		w, err = k.p.repo.Update(ctx, w.SessionID, func(w *Workspace) error { return w.Preserve(a, trashAfter, note) })
		if err != nil {
			return Result{}, fmt.Errorf("record the preserved work of session %d: %w", id, err)
		}
		// Recorded first: a crash here leaves a clone the retry deletes,
		// never a deleted clone whose artifacts nobody knows of.
		if err := os.RemoveAll(w.Path); err != nil {
			return Result{}, fmt.Errorf("delete the preserved clone %s: %w", w.Path, err)
		}
		return Result{Outcome: OutcomePreserved, Workspace: w, Detail: note}, nil
	})
}

func patchWords(a Artifacts) string {
	if a.Patch == "" {
		return "no uncommitted changes"
	}
	return fmt.Sprintf("uncommitted and untracked changes in a %d-byte binary diff", a.PatchBytes)
}

func (k *Keeper) stoodDown(w Workspace, err error) (Result, error) {
	if err != nil {
		return Result{}, fmt.Errorf("read the status of session %d: %w", w.SessionID, err)
	}
	return Result{Outcome: OutcomeStoodDown, Workspace: w, Detail: "the session's status changed meanwhile: nothing done"}, nil
}

// vanished records a clone gone from disk: nothing to preserve, nothing to
// keep, no deadline to hold.
func (k *Keeper) vanished(ctx context.Context, w Workspace) (Result, error) {
	return k.reap(ctx, w, OutcomeVanished, fmt.Sprintf(
		"the clone %s had vanished from runner node %q before it could be preserved: nothing to keep", w.Path, w.Node))
}

func (k *Keeper) reap(ctx context.Context, w Workspace, outcome Outcome, note string) (Result, error) {
	if err := os.RemoveAll(w.Path); err != nil {
		return Result{}, fmt.Errorf("delete the clone %s: %w", w.Path, err)
	}
	if w.Archive.Artifacts.Kept() {
		if err := os.RemoveAll(w.Archive.Artifacts.Dir); err != nil {
			return Result{}, fmt.Errorf("delete the artifacts %s: %w", w.Archive.Artifacts.Dir, err)
		}
	}
	w, err := k.p.repo.Update(ctx, w.SessionID, func(w *Workspace) error { return w.Reap(note) })
	if err != nil {
		return Result{}, fmt.Errorf("record the clone of session %d reaped: %w", w.SessionID, err)
	}
	return Result{Outcome: outcome, Workspace: w, Detail: note}, nil
}

func (k *Keeper) retain(ctx context.Context, w Workspace, trashAfter time.Time, outcome Outcome, dropped int, note string) (Result, error) {
	size := diskUsage(w.Path)
	w, err := k.p.repo.Update(ctx, w.SessionID, func(w *Workspace) error { return w.Retain(trashAfter, note, dropped, size) })
	if err != nil {
		return Result{}, fmt.Errorf("record the clone of session %d retained: %w", w.SessionID, err)
	}
	return Result{Outcome: outcome, Workspace: w, Detail: note}, nil
}

// gone says whether path is missing from disk: the one way a clone is
// decided vanished (an ENOENT from git may be git missing from PATH).
func gone(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// diskUsage is the bytes of the files under path (best effort: what cannot
// be read counts nothing).
func diskUsage(path string) int64 {
	var total int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, walkErr error) error {
		if walkErr == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil // what cannot be read is skipped, not fatal
	})
	return total
}

// inspection is a clone's state as git sees it.
type inspection struct {
	head     string // HEAD's commit; "" when unborn
	branch   string // HEAD's branch; "" when detached
	headTree string // HEAD's tree (the empty tree when unborn)
	tree     string // the working tree, untracked files included
	unpushed int    // commits on HEAD or a local branch and on no remote-tracking ref
	deleted  int    // tracked files the working tree deletes
	other    int    // files it adds or changes
}

func (i inspection) clean() bool { return i.unpushed == 0 && i.tree == i.headTree }

// inspect reads clone without changing it: its index is never touched
// (the working tree is read through a scratch index).
func (k *Keeper) inspect(ctx context.Context, clone string) (inspection, error) {
	var i inspection
	var err error
	if i.head, err = k.p.gitOptional(ctx, clone, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return i, err
	}
	if i.branch, err = k.p.gitOptional(ctx, clone, "symbolic-ref", "--quiet", "--short", "HEAD"); err != nil {
		return i, err
	}
	count := []string{"rev-list", "--count", "--branches", "--not", "--remotes"}
	if i.head != "" {
		count = []string{"rev-list", "--count", "HEAD", "--branches", "--not", "--remotes"}
	}
	n, err := k.git(ctx, clone, nil, count...)
	if err != nil {
		return i, err
	}
	if i.unpushed, err = strconv.Atoi(n); err != nil {
		return i, fmt.Errorf("git rev-list --count said %q", n)
	}
	if i.headTree, err = k.headTree(ctx, clone, i.head); err != nil {
		return i, err
	}
	if i.tree, err = k.workingTree(ctx, clone); err != nil {
		return i, err
	}
	if i.tree == i.headTree {
		return i, nil
	}
	status, err := k.git(ctx, clone, nil, "diff", "--name-status", "--no-renames", "-z", i.headTree, i.tree)
	if err != nil {
		return i, err
	}
	fields := strings.Split(strings.Trim(status, "\x00"), "\x00")
	for j := 0; j+1 < len(fields); j += 2 {
		if fields[j] == "D" {
			i.deleted++
		} else {
			i.other++
		}
	}
	return i, nil
}

func (k *Keeper) headTree(ctx context.Context, clone, head string) (string, error) {
	if head == "" {
		return k.git(ctx, clone, nil, "hash-object", "-t", "tree", "/dev/null")
	}
	return k.git(ctx, clone, nil, "rev-parse", "--verify", "HEAD^{tree}")
}

// workingTree writes clone's working tree as git add -A sees it (ignored
// files left out) as a tree object and returns its id. It works in a
// scratch index (GIT_INDEX_FILE), seeded from the clone's own index when
// there is one so unchanged files are not read again; the clone's index is
// never written.
func (k *Keeper) workingTree(ctx context.Context, clone string) (string, error) {
	if err := os.MkdirAll(k.store, 0o700); err != nil {
		return "", fmt.Errorf("create the preservation store: %w", err)
	}
	scratch, err := os.MkdirTemp(k.store, ".index-")
	if err != nil {
		return "", fmt.Errorf("create a scratch index: %w", err)
	}
	defer os.RemoveAll(scratch)
	index := filepath.Join(scratch, "index")
	env := []string{"GIT_INDEX_FILE=" + index}
	gitDir, err := k.git(ctx, clone, nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", err
	}
	if err := copyFile(filepath.Join(gitDir, "index"), index); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("copy the clone's index: %w", err)
	}
	if _, err := k.git(ctx, clone, env, "add", "--all", "--", "."); err != nil {
		return "", err
	}
	return k.git(ctx, clone, env, "write-tree")
}

// writeArtifacts writes the bundle, the binary diff and a description into
// the session's directory of the preservation store, replacing whatever an
// earlier run that recorded nothing left there.
func (k *Keeper) writeArtifacts(ctx context.Context, w Workspace, i inspection) (Artifacts, error) {
	final := k.ArtifactsDir(w.SessionID)
	tmp := final + ".partial"
	for _, dir := range []string{tmp, final} {
		if err := os.RemoveAll(dir); err != nil {
			return Artifacts{}, fmt.Errorf("clear %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return Artifacts{}, fmt.Errorf("create %s: %w", tmp, err)
	}
	defer os.RemoveAll(tmp)
	a := Artifacts{Dir: final, Head: i.head, Branch: i.branch, Tree: i.tree}
	if i.unpushed > 0 {
		args := []string{"bundle", "create", filepath.Join(tmp, BundleFile), "--branches", "--not", "--remotes"}
		if i.head != "" {
			args = []string{"bundle", "create", filepath.Join(tmp, BundleFile), "HEAD", "--branches", "--not", "--remotes"}
		}
		if _, err := k.git(ctx, w.Path, nil, args...); err != nil {
			return Artifacts{}, err
		}
		a.Bundle = filepath.Join(final, BundleFile)
	}
	if i.tree != i.headTree {
		if _, err := k.git(ctx, w.Path, nil, "diff", "--binary", "--no-renames", "--no-color", "--no-ext-diff",
			"--output="+filepath.Join(tmp, PatchFile), i.headTree, i.tree); err != nil {
			return Artifacts{}, err
		}
		a.Patch = filepath.Join(final, PatchFile)
	}
	meta, err := json.MarshalIndent(map[string]any{
		"session_id": w.SessionID, "node": w.Node, "clone": w.Path, "git_root": redact(w.GitRoot), "branch": w.Branch,
		"subdirectory": w.Subdirectory, "head": a.Head, "head_branch": a.Branch, "working_tree": a.Tree,
		"unpushed_commits": i.unpushed, "bundle": filepath.Base(a.Bundle), "patch": filepath.Base(a.Patch),
		"restore": "git clone <git_root> --branch <branch>; git fetch " + BundleFile + " '+refs/heads/*:refs/heads/*'; " +
			"git checkout -B <head_branch> <head>; git apply --binary " + PatchFile,
	}, "", "  ")
	if err != nil {
		return Artifacts{}, fmt.Errorf("describe the artifacts: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, MetadataFile), append(meta, '\n'), 0o600); err != nil {
		return Artifacts{}, fmt.Errorf("write %s: %w", MetadataFile, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return Artifacts{}, fmt.Errorf("move the artifacts into %s: %w", final, err)
	}
	a.BundleBytes, a.PatchBytes = fileSize(a.Bundle), fileSize(a.Patch)
	return a, nil
}

func fileSize(path string) int64 {
	if path == "" {
		return 0
	}
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}

// git runs a git command in dir that must succeed, with extra environment,
// and returns its trimmed output.
func (k *Keeper) git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	run, err := runGitEnv(ctx, k.p.git, dir, env, args...)
	if err != nil {
		return "", fmt.Errorf("git %s: %w (%s)", args[0], err, gitSaid(run.stderr))
	}
	return run.stdout, nil
}
