package grpcapi

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/runner/internal/clone"
	"github.com/zimmerhq/zimmer/services/runner/internal/infer"
	"github.com/zimmerhq/zimmer/services/runner/internal/summary"
)

// Effects handles the effects lifecycle addresses to the runner: an
// archive's deferred clean-up of the session's clone starts
// session/<session>/clone-cleanup, an unarchive's restore starts
// session/<session>/clone-restore, a pause's title and category inference
// starts session/<session>/infer, a pause's or failure's status-summary
// refresh starts session/<session>/status-summary and a fork's harvest
// session/<fork>/status-summary-harvest (package summary). Delivery is at
// least once: a workflow of the
// same id already running answers applied false (it re-reads the session
// before it acts, so it serves this event too); one run after another is
// harmless (a clean-up of a preserved clone, a restore of a ready one, do
// nothing).
type Effects struct {
	starter    clone.Starter
	undoWindow time.Duration
	logger     *slog.Logger
	// summaries: a pause's or failure's status-summary refresh forks the
	// session (RUNNER_STATUS_SUMMARIES); a fork's harvest is carried out
	// either way, so a fork at work when they were turned off still ends.
	summaries bool
}

// WithStatusSummaries turns the status-summary refreshes on.
func (e *Effects) WithStatusSummaries() *Effects {
	e.summaries = true
	return e
}

// NewEffects returns the handler; undoWindow is RUNNER_CLONE_UNDO_WINDOW.
func NewEffects(starter clone.Starter, undoWindow time.Duration, logger *slog.Logger) *Effects {
	return &Effects{starter: starter, undoWindow: undoWindow, logger: logger}
}

// Consume carries out one effect event.
func (e *Effects) Consume(ctx context.Context, ev *lifecyclev1.SessionEvent) (*lifecyclev1.ConsumeSessionEventResponse, error) {
	eff, id := ev.GetEffect(), ev.GetSessionId()
	switch eff.GetKind().(type) {
	case *lifecyclev1.SessionEffect_DeferredCleanup, *lifecyclev1.SessionEffect_RestoreClone,
		*lifecyclev1.SessionEffect_HarvestFork, *lifecyclev1.SessionEffect_Inference:
	case *lifecyclev1.SessionEffect_StatusSummaryRefresh:
		if !e.summaries {
			return effect.Unhandled(ctx, e.logger, ev, "status summaries are off on this runner (RUNNER_STATUS_SUMMARIES=false)"), nil
		}
	default:
		return effect.Unhandled(ctx, e.logger, ev, "not the runner's"), nil
	}
	if id <= 0 {
		return nil, toStatus(validation.Invalid("event.session_id", "must be the session's positive id, got %d", id))
	}
	var (
		started bool
		err     error
	)
	switch kind := eff.GetKind().(type) {
	case *lifecyclev1.SessionEffect_RestoreClone:
		started, err = clone.StartRestore(ctx, e.starter, id)
	case *lifecyclev1.SessionEffect_Inference:
		// One at a time per session: a pause while one runs is served by
		// it (it reads what is pending when it starts) or by the next.
		started, err = infer.Start(ctx, e.starter, id)
	case *lifecyclev1.SessionEffect_DeferredCleanup:
		var trashAfter time.Time
		if trashAfter, err = deadline(kind.DeferredCleanup, eff.GetSession()); err != nil {
			return nil, toStatus(err)
		}
		started, err = clone.StartCleanup(ctx, e.starter, clone.CleanupInput{SessionID: id, TrashAfter: trashAfter, UndoWindow: e.undoWindow})
	case *lifecyclev1.SessionEffect_StatusSummaryRefresh:
		started, err = summary.StartRefresh(ctx, e.starter, id)
	case *lifecyclev1.SessionEffect_HarvestFork:
		h := kind.HarvestFork
		started, err = summary.StartHarvest(ctx, e.starter, summary.HarvestInput{
			ForkID: id, Failed: h.FailureReason != nil, FailureReason: h.GetFailureReason()})
	}
	if err != nil {
		name := effect.Name(eff)
		e.logger.Warn("start a session's effect workflow", "effect", name, "session_id", id, "error", err)
		// Temporal's trouble is transient for the relay: it retries.
		return nil, toStatus(refuse(codes.Unavailable, "hand %s of session %d to Temporal: %v", name, id, err))
	}
	return &lifecyclev1.ConsumeSessionEventResponse{Applied: started}, nil
}

// deadline is the archive's trash_after: the effect's, else the session
// snapshot's.
func deadline(cleanup *lifecyclev1.DeferredCleanupEffect, s *lifecyclev1.Session) (time.Time, error) {
	for _, ts := range []*timestamppb.Timestamp{cleanup.GetTrashAfter(), s.GetTrashAfter()} {
		if ts == nil {
			continue
		}
		if err := ts.CheckValid(); err != nil {
			return time.Time{}, validation.Invalid("event.effect.deferred_cleanup.trash_after", "must be a valid time: %v", err)
		}
		return ts.AsTime().UTC(), nil
	}
	return time.Time{}, validation.Invalid("event.effect.deferred_cleanup.trash_after", "is required: the deadline of what the trash keeps")
}
