package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// SealQueue closes the session's queue for one archive attempt and says whether
// the archive may go ahead: refusal is the guard's text over a non-empty
// queue without force (the queue is unsealed again); clause is what the
// archive line adds about the messages it retires.
type SealQueue struct {
	Messages Messages
}

// Handle seals the session's queue for the archive attempt.
func (uc SealQueue) Handle(ctx context.Context, sessionID int64, attempt string, force bool) (refusal, clause string, live int, err error) {
	ms, err := uc.Messages.Seal(ctx, sessionID, attempt)
	if err != nil {
		return "", "", 0, err
	}
	if len(ms) > 0 && !force {
		if err := uc.Messages.Unseal(ctx, sessionID, attempt); err != nil {
			return "", "", 0, err
		}
		return domain.ArchiveRefusal(sessionID, ms), "", len(ms), nil
	}
	return "", domain.RetirementClause(ms), len(ms), nil
}

// UnsealQueue reopens a queue the archive attempt sealed.
type UnsealQueue struct {
	Messages Messages
}

// Handle unseals the session's queue sealed by attempt.
func (uc UnsealQueue) Handle(ctx context.Context, sessionID int64, attempt string) error {
	return uc.Messages.Unseal(ctx, sessionID, attempt)
}

// RetireQueue carries out an archive that committed at archivedAt: every live
// message becomes undelivered, and the loss pages once per session unless
// the spec's single exemption covers it (domain.AlertFor).
type RetireQueue struct {
	Messages Messages
	Alerts   alert.Raiser
	Logger   *slog.Logger
}

// Handle retires the session's queue; attempt is the archive attempt that
// sealed it ("" for a system archive).
func (uc RetireQueue) Handle(ctx context.Context, sessionID int64, forced bool, archivedAt time.Time, attempt string) error {
	retired, err := uc.Messages.Retire(ctx, sessionID, archivedAt, attempt)
	if err != nil {
		return err
	}
	if len(retired) == 0 {
		return nil
	}
	a := domain.AlertFor(retired, forced)
	uc.Logger.InfoContext(ctx, "archive retired queued messages", "session_id", sessionID, "retired", len(retired),
		"paged", len(a.Page), "exempted_notices", a.ExemptedNotices)
	if a.Pages() {
		ids := make([]any, len(a.Page))
		for i, m := range a.Page {
			ids[i] = m.ID
		}
		alert.Raise(ctx, uc.Alerts, uc.Logger, fmt.Sprintf("queue_messages_retired/%d", sessionID), a.Summary(sessionID),
			map[string]any{"title": domain.RetirementAlertTitle, "session_id": sessionID, "message_ids": ids, "forced": forced})
	}
	return nil
}

// ReopenQueue lifts the queue's seal: the session was unarchived at
// unarchivedAt. Undelivered messages stay undelivered.
type ReopenQueue struct {
	Messages Messages
}

// Handle reopens the session's queue.
func (uc ReopenQueue) Handle(ctx context.Context, sessionID int64, unarchivedAt time.Time) error {
	return uc.Messages.Reopen(ctx, sessionID, unarchivedAt)
}
