package workflow

import (
	"go.temporal.io/sdk/workflow"
)

// revokeTurn revokes every credential minted for turn id, whose RunTurn
// has ended however it ended: completed, failed, cancelled, lost with its
// node, or stopped by a runner shutdown that left lifecycle no time to
// hear RunTurn's own revocation. A credential must not outlive its turn,
// so the workflow owns this: a local activity (no dispatch between the
// turn's end and what follows it), asked until lifecycle answers. A turn
// that never minted one costs a call that revokes nothing.
func (t *turnRunner) revokeTurn(ctx workflow.Context, id string) {
	err := askLocally(ctx, ActivityRevokeTurnCredentials,
		TurnCredentialsRequest{SessionID: t.st.Session.ID, TurnID: id}, ErrCredentialsRefused)
	if err != nil {
		// Only a refusal retrying cannot change (or the workflow's end)
		// comes back: the credential's expiry and the node's next sweep
		// still close it.
		workflow.GetLogger(ctx).Error("revoke the ended turn's credentials", "turn", id, "error", err)
	}
}
