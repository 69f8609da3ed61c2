package workspace

import (
	"errors"
	"time"
)

// Archive is what a session's archive did with its clone: whether the
// clone is kept whole (Retained), its unpushed work kept as artifacts
// (Preserved) or nothing kept (Reaped), until when, and why. Unarchive
// reads it to restore the clone; the trash reaper to delete what expired;
// the session detail shows it.
type Archive struct {
	// TrashAfter is when the trash reaper deletes what is kept (the
	// retained clone or the artifacts); nil when nothing is kept for the
	// trash, or after an unarchive (nothing reaps it then).
	TrashAfter *time.Time
	// Note says what happened to the clone, in words: why it is retained,
	// that it was clean, that it vanished, where a restore left the
	// artifacts it could not apply.
	Note string
	// CloneBytes is the retained clone's size on disk, measured when it was
	// retained; 0 otherwise.
	CloneBytes int64
	// DroppedDeletions is how many deleted tracked files a mangled clone
	// held (≥ MangledDeletions): deletions not trusted as work, so the
	// clone was kept whole and an unarchive brings the files back from HEAD.
	DroppedDeletions int
	// Artifacts are the preserved unpushed work, when there is any.
	Artifacts Artifacts
}

// Artifacts are a clone's unpushed work, kept in the runner node's
// preservation store (RUNNER_PRESERVATION_DIR/<session>/) after the clone
// itself was deleted. Applied to a fresh clone of the same branch they
// give back the preserved tree byte for byte.
type Artifacts struct {
	// Dir is the session's directory in the preservation store; "" when
	// nothing is kept.
	Dir string
	// Bundle is the git bundle of the commits on no remote-tracking ref
	// (the local branches and HEAD); "" when every commit was pushed.
	Bundle      string
	BundleBytes int64
	// Patch is the binary diff from HEAD to the working tree, untracked
	// files included (git add -A's view: ignored files are not work);
	// "" when the working tree was HEAD's.
	Patch      string
	PatchBytes int64
	// Head is the commit checked out when the work was preserved; Branch
	// its branch, "" for a detached HEAD.
	Head   string
	Branch string
	// Tree is the working tree as preserved (git write-tree of git add -A
	// into a scratch index): a restore must reproduce exactly this tree.
	Tree string
}

// Kept says whether there are artifacts on disk.
func (a Artifacts) Kept() bool { return a.Dir != "" }

// Retain records the clone kept whole on disk until trashAfter: a mangled
// clone (dropped > 0 deletions not trusted), or one whose work could not be
// extracted (it is then the only copy). bytes is its size on disk.
func (w *Workspace) Retain(trashAfter time.Time, note string, dropped int, bytes int64) error {
	if w.State != Ready && w.State != Retained {
		return &TransitionError{From: w.State, To: Retained}
	}
	if note == "" {
		return errors.New("a retained workspace needs a note saying why")
	}
	w.State = Retained
	w.Archive = Archive{TrashAfter: &trashAfter, Note: note, CloneBytes: bytes, DroppedDeletions: dropped}
	return nil
}

// Preserve records the clone deleted and its unpushed work kept as a until
// trashAfter.
func (w *Workspace) Preserve(a Artifacts, trashAfter time.Time, note string) error {
	if w.State != Ready {
		return &TransitionError{From: w.State, To: Preserved}
	}
	if !a.Kept() {
		return errors.New("a preserved workspace needs its artifacts")
	}
	w.State = Preserved
	w.Archive = Archive{TrashAfter: &trashAfter, Note: note, Artifacts: a}
	return nil
}

// Reap records that nothing of the clone is left: deleted clean, vanished
// from disk, or reaped by the trash at its deadline. The deadline is
// cleared: there is nothing left for it to hold.
func (w *Workspace) Reap(note string) error {
	if w.State != Ready && w.State != Retained && w.State != Preserved {
		return &TransitionError{From: w.State, To: Reaped}
	}
	w.State = Reaped
	w.Archive = Archive{Note: note}
	return nil
}

// Unarchive records the clone back on disk, ready for the session's turns
// at path: restored as it stood (checkout nil) or cloned again (checkout is
// the new clone's). kept are artifacts a restore could not apply and left
// on disk; they have no deadline (nothing reaps them after an unarchive),
// and note says where they are.
func (w *Workspace) Unarchive(path string, checkout *Checkout, kept Artifacts, note string) error {
	if w.State != Retained && w.State != Preserved && w.State != Reaped {
		return &TransitionError{From: w.State, To: Ready}
	}
	w.State, w.Path = Ready, path
	if checkout != nil {
		w.CheckedOutBranch, w.BaseCommit = checkout.Branch, checkout.Commit
	}
	w.Archive = Archive{Note: note, Artifacts: kept}
	return nil
}
