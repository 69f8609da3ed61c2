package workspace

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Restore is an unarchive's: session id's clone comes back at the path its
// turns know. A clone retained on disk is restored as it stands (a mangled
// one gets its deleted tracked files back from HEAD). Otherwise the clone
// is made again from git_root and branch, the preserved bundle's commits
// are fetched and checked out, and the binary diff applied, so the working
// tree is byte for byte the preserved one (checked against the preserved
// tree id); the artifacts are then deleted. Preserved work that cannot be
// applied leaves a pristine clone and the artifacts on disk, with a note
// saying where. unarchived is asked before anything is touched: false (the
// session is archived again) stands down.
//
// A ready workspace is left alone. A *PrepareError is a clone that could
// not be made (Retryable as for Prepare); the workspace keeps its state, so
// a retry starts over.
func (k *Keeper) Restore(ctx context.Context, id int64, unarchived StatusCheck) (Result, error) {
	return k.locked(ctx, id, func(w Workspace) (Result, error) {
		switch w.State {
		case Retained, Preserved, Reaped:
		default:
			return Result{Outcome: OutcomeUnchanged, Workspace: w, Detail: fmt.Sprintf("the workspace is %s", w.State)}, nil
		}
		if still, err := unarchived(ctx); err != nil || !still {
			return k.stoodDown(w, err)
		}
		if w.State == Retained && !gone(w.Path) {
			return k.restoreRetained(ctx, w)
		}
		return k.reclone(ctx, w)
	})
}

// restoreRetained puts a retained clone back to work as it stands; a
// mangled one first gets the tracked files it deleted back from HEAD.
func (k *Keeper) restoreRetained(ctx context.Context, w Workspace) (Result, error) {
	note := fmt.Sprintf("the retained clone %s is restored as it stood", w.Path)
	if w.Archive.DroppedDeletions > 0 {
		n, err := k.undelete(ctx, w.Path)
		if err != nil {
			return Result{}, fmt.Errorf("bring back the files the mangled clone %s deleted: %w", w.Path, err)
		}
		note = fmt.Sprintf("the retained clone %s is restored, with the %d tracked files it had deleted back from HEAD", w.Path, n)
	}
	w, err := k.p.repo.Update(ctx, w.SessionID, func(w *Workspace) error {
		return w.Unarchive(w.Path, nil, Artifacts{}, note)
	})
	if err != nil {
		return Result{}, fmt.Errorf("record the clone of session %d restored: %w", w.SessionID, err)
	}
	return Result{Outcome: OutcomeRestored, Workspace: w, Detail: note}, nil
}

// undelete checks out from HEAD the tracked files the working tree
// deletes, leaving every other change as it is, and says how many.
func (k *Keeper) undelete(ctx context.Context, clone string) (int, error) {
	list, err := k.git(ctx, clone, nil, "diff", "--name-only", "--no-renames", "--diff-filter=D", "-z", "HEAD")
	if err != nil {
		return 0, err
	}
	if list == "" {
		return 0, nil
	}
	paths, err := os.CreateTemp(k.store, ".undelete-")
	if err != nil {
		return 0, fmt.Errorf("list the deleted files: %w", err)
	}
	defer os.Remove(paths.Name())
	_, err = paths.WriteString(list)
	if cerr := paths.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("list the deleted files: %w", err)
	}
	if _, err := k.git(ctx, clone, nil, "checkout", "HEAD", "--pathspec-from-file="+paths.Name(), "--pathspec-file-nul"); err != nil {
		return 0, err
	}
	return len(strings.Split(strings.Trim(list, "\x00"), "\x00")), nil
}

// reclone makes the clone again beside its path, applies the preserved
// work, and moves the result into place.
func (k *Keeper) reclone(ctx context.Context, w Workspace) (Result, error) {
	staging := filepath.Join(filepath.Dir(w.Path), ".staging", filepath.Base(w.Path))
	if err := os.MkdirAll(filepath.Dir(staging), 0o700); err != nil {
		return Result{}, fmt.Errorf("create the staging directory: %w", err)
	}
	clone := func() (Checkout, error) {
		if err := os.RemoveAll(staging); err != nil {
			return Checkout{}, fmt.Errorf("clear %s: %w", staging, err)
		}
		c, perr := k.p.clone(ctx, w.Spec(), staging)
		if perr != nil {
			_ = os.RemoveAll(staging)
			return Checkout{}, perr
		}
		return c, nil
	}
	checkout, err := clone()
	if err != nil {
		return Result{}, err
	}
	a := w.Archive.Artifacts
	var kept Artifacts
	note := fmt.Sprintf("the clone is made again at %s from %s", w.Path, describeSource(w.Spec()))
	outcome := OutcomeRestored
	if a.Kept() {
		if err := k.apply(ctx, staging, a); err != nil {
			// A pristine clone is the better of the two losses: the session
			// can work, and the artifacts stay where the note says.
			if checkout, err = clone(); err != nil {
				return Result{}, err
			}
			kept, outcome = a, OutcomeRestoredPristine
			note = fmt.Sprintf("the clone is made again at %s from %s, but its preserved work could not be applied (%v); "+
				"the artifacts stay in %s on runner node %q and nothing deletes them: apply them by hand",
				w.Path, describeSource(w.Spec()), err, a.Dir, w.Node)
		} else {
			note += fmt.Sprintf(", with its preserved work (%s) applied byte for byte", artifactWords(a))
		}
	}
	if problem := subdirectoryProblem(staging, w.Subdirectory); problem != "" && outcome == OutcomeRestored && a.Kept() {
		// The preserved work removed the agent's subdirectory: the
		// session could not start in it.
		if checkout, err = clone(); err != nil {
			return Result{}, err
		}
		kept, outcome = a, OutcomeRestoredPristine
		note = fmt.Sprintf("the clone is made again at %s from %s; its preserved work was not applied because subdirectory "+
			"%q %s with it; the artifacts stay in %s on runner node %q and nothing deletes them",
			w.Path, describeSource(w.Spec()), w.Subdirectory, problem, a.Dir, w.Node)
	}
	if err := os.RemoveAll(w.Path); err != nil {
		return Result{}, fmt.Errorf("clear %s: %w", w.Path, err)
	}
	if err := os.Rename(staging, w.Path); err != nil {
		return Result{}, fmt.Errorf("move the restored clone into %s: %w", w.Path, err)
	}
	w, err = k.p.repo.Update(ctx, w.SessionID, func(w *Workspace) error {
		return w.Unarchive(w.Path, &checkout, kept, note)
	})
	if err != nil {
		return Result{}, fmt.Errorf("record the clone of session %d restored: %w", w.SessionID, err)
	}
	if a.Kept() && !kept.Kept() {
		// Applied and recorded: the clone holds the work now.
		_ = os.RemoveAll(a.Dir)
	}
	return Result{Outcome: outcome, Workspace: w, Detail: note}, nil
}

func artifactWords(a Artifacts) string {
	var parts []string
	if a.Bundle != "" {
		parts = append(parts, "a bundle of unpushed commits")
	}
	if a.Patch != "" {
		parts = append(parts, "a binary diff of uncommitted and untracked changes")
	}
	if len(parts) == 0 {
		return "nothing to apply"
	}
	return strings.Join(parts, " and ")
}

// apply puts preserved work onto a fresh clone: the bundle's branches and
// HEAD fetched, HEAD checked out on its branch, the diff applied to the
// working tree; then the tree must be the preserved one.
func (k *Keeper) apply(ctx context.Context, clone string, a Artifacts) error {
	const preservedHead = "refs/zimmer/preserved-head"
	if a.Bundle != "" {
		heads, err := k.git(ctx, clone, nil, "bundle", "list-heads", a.Bundle)
		if err != nil {
			return err
		}
		args := []string{"fetch", "--quiet", "--no-tags", "--update-head-ok", a.Bundle}
		sc := bufio.NewScanner(strings.NewReader(heads))
		for sc.Scan() {
			_, ref, _ := strings.Cut(sc.Text(), " ")
			switch {
			case ref == "HEAD":
				args = append(args, "+HEAD:"+preservedHead)
			case strings.HasPrefix(ref, "refs/heads/"):
				args = append(args, "+"+ref+":"+ref)
			}
		}
		if _, err := k.git(ctx, clone, nil, args...); err != nil {
			return err
		}
	}
	if a.Head != "" {
		args := []string{"checkout", "--quiet", "--force", "--detach", a.Head}
		if a.Branch != "" {
			args = []string{"checkout", "--quiet", "--force", "-B", a.Branch, a.Head}
		}
		if _, err := k.git(ctx, clone, nil, args...); err != nil {
			return err
		}
		if _, err := k.git(ctx, clone, nil, "update-ref", "-d", preservedHead); err != nil {
			return err
		}
	}
	if a.Patch != "" {
		if _, err := k.git(ctx, clone, nil, "apply", "--binary", "--whitespace=nowarn", a.Patch); err != nil {
			return err
		}
	}
	tree, err := k.workingTree(ctx, clone)
	if err != nil {
		return err
	}
	if tree != a.Tree {
		return fmt.Errorf("the restored working tree %s is not the preserved %s", tree, a.Tree)
	}
	return nil
}

// Reap is the trash's: session id's retained clone or preserved artifacts
// are deleted once now is past their deadline, and the workspace recorded
// reaped. Anything else is left alone (unarchived meanwhile, say).
func (k *Keeper) Reap(ctx context.Context, id int64, now time.Time) (Result, error) {
	return k.locked(ctx, id, func(w Workspace) (Result, error) {
		due := w.Archive.TrashAfter != nil && !now.Before(*w.Archive.TrashAfter)
		if (w.State != Retained && w.State != Preserved) || !due {
			return Result{Outcome: OutcomeUnchanged, Workspace: w, Detail: fmt.Sprintf("the workspace is %s, not due", w.State)}, nil
		}
		what := "retained clone " + w.Path
		if w.State == Preserved {
			what = "preserved artifacts " + w.Archive.Artifacts.Dir
		}
		return k.reap(ctx, w, OutcomeReaped, fmt.Sprintf("the trash deadline %s passed: the %s on runner node %q is deleted",
			w.Archive.TrashAfter.UTC().Format(time.RFC3339), what, w.Node))
	})
}
