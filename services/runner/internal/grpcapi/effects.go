package grpcapi

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/runner/internal/clone"
)

// The lifecycle effects the runner owns (lifecycle's domain names them;
// its outbox delivers them to the subscriber "runner").
const (
	EffectDeferredCleanup = "enqueue_deferred_cleanup"
	EffectRestoreClone    = "restore_clone"
	EffectInference       = "enqueue_session_inference_if_needed"
	EffectStatusSummary   = "enqueue_status_summary_refresh"
	EffectHarvestFork     = "harvest_status_summary_fork"
)

// notBuilt are runner-owned effects nothing carries out yet: acknowledged
// with a log line, so the relay does not retry them for ever.
var notBuilt = map[string]bool{EffectInference: true, EffectStatusSummary: true, EffectHarvestFork: true}

// Effects handles the effects lifecycle addresses to the runner: an
// archive's deferred clean-up of the session's clone starts
// session/<session>/clone-cleanup, an unarchive's restore starts
// session/<session>/clone-restore. Delivery is at least once: a workflow of the
// same id already running answers applied false (it re-reads the session
// before it acts, so it serves this event too); one run after another is
// harmless (a clean-up of a preserved clone, a restore of a ready one, do
// nothing).
type Effects struct {
	starter    clone.Starter
	undoWindow time.Duration
	logger     *slog.Logger
}

// NewEffects returns the handler; undoWindow is RUNNER_CLONE_UNDO_WINDOW.
func NewEffects(starter clone.Starter, undoWindow time.Duration, logger *slog.Logger) *Effects {
	return &Effects{starter: starter, undoWindow: undoWindow, logger: logger}
}

// Consume carries out one effect event.
func (e *Effects) Consume(ctx context.Context, ev *lifecyclev1.SessionEvent) (*lifecyclev1.ConsumeSessionEventResponse, error) {
	effect := ev.GetEffect()
	name, id := effect.GetName(), ev.GetSessionId()
	switch {
	case notBuilt[name]:
		e.logger.Info("runner effect acknowledged, not carried out: the runner does not build it yet",
			"effect", name, "session_id", id, "event_id", ev.GetEventId())
		return &lifecyclev1.ConsumeSessionEventResponse{Applied: false}, nil
	case name != EffectDeferredCleanup && name != EffectRestoreClone:
		return &lifecyclev1.ConsumeSessionEventResponse{Applied: false}, nil
	case id <= 0:
		return nil, toStatus(validation.Invalid("event.session_id", "must be the session's positive id, got %d", id))
	}
	var (
		started bool
		err     error
	)
	if name == EffectRestoreClone {
		started, err = clone.StartRestore(ctx, e.starter, id)
	} else {
		var trashAfter time.Time
		if trashAfter, err = deadline(effect); err != nil {
			return nil, toStatus(err)
		}
		started, err = clone.StartCleanup(ctx, e.starter, clone.CleanupInput{SessionID: id, TrashAfter: trashAfter, UndoWindow: e.undoWindow})
	}
	if err != nil {
		e.logger.Warn("start a session clone's workflow", "effect", name, "session_id", id, "error", err)
		// Temporal's trouble is transient for the relay: it retries.
		return nil, status.Errorf(codes.Unavailable, "hand %s of session %d to Temporal: %v", name, id, err)
	}
	return &lifecyclev1.ConsumeSessionEventResponse{Applied: started}, nil
}

// deadline is the archive's trash_after: the payload's, else the session
// snapshot's.
func deadline(effect *lifecyclev1.SessionEffect) (time.Time, error) {
	if raw, ok := effect.GetPayload().AsMap()["trash_after"].(string); ok && raw != "" {
		t, err := time.Parse(time.RFC3339, raw)
		if err != nil {
			return time.Time{}, validation.Invalid("event.effect.payload.trash_after", "must be an RFC 3339 time, got %q", raw)
		}
		return t.UTC(), nil
	}
	if ts := effect.GetSession().GetTrashAfter(); ts != nil {
		return ts.AsTime().UTC(), nil
	}
	return time.Time{}, validation.Invalid("event.effect.payload.trash_after", "is required: the deadline of what the trash keeps")
}
