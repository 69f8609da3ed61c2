package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// TakeOver moves the session's workspace from a runner node declared dead
// (from) to this node, as a clone to make anew here: the dead node's disk,
// and whatever was not pushed from it, stay where they are. It changes
// nothing when the workspace is on another node than from (taken over
// already, or never there), so a retried call is harmless.
func (p *Preparer) TakeOver(ctx context.Context, sessionID int64, from string) error {
	if from == "" || from == p.node {
		return nil
	}
	_, err := p.repo.Update(ctx, sessionID, func(w *Workspace) error {
		if w.Node != from {
			return nil
		}
		w.Node, w.State, w.Path, w.FailureReason = p.node, Provisioning, p.Path(sessionID), ""
		w.CheckedOutBranch, w.BaseCommit, w.Archive = "", "", Archive{}
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("take the workspace of session %d over from dead node %q: %w", sessionID, from, err)
	}
	return nil
}

// AwaitRestore waits, polling every poll, while the session's clone is
// being given back — its workspace still in the trash's states because the
// unarchive's restore (session/<session>/clone-restore) has not finished — and
// answers once the clone is ready on disk. A ready workspace whose clone is
// gone, or one that cannot become ready, is an error at once.
func (p *Preparer) AwaitRestore(ctx context.Context, sessionID int64, poll time.Duration) error {
	for {
		w, err := p.repo.Get(ctx, sessionID)
		if err != nil {
			return fmt.Errorf("read the workspace of session %d: %w", sessionID, err)
		}
		switch w.State {
		case Ready:
			if _, err := os.Stat(filepath.Join(w.Path, ".git")); err != nil {
				return fmt.Errorf("the clone %s of session %d is %w (%w)", w.Path, sessionID, ErrCloneMissing, pathErr(err))
			}
			return nil
		case Retained, Preserved, Reaped:
			// The restore has not run yet.
		default:
			return fmt.Errorf("the workspace of session %d is %s, not a clone to run in", sessionID, w.State)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the clone of session %d was not given back in time (its workspace is still %s): %w", sessionID, w.State, ctx.Err())
		case <-time.After(poll):
		}
	}
}
