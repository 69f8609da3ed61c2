package workspace

import (
	"context"
	"errors"
	"fmt"
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
