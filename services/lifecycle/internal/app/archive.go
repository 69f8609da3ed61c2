package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// QueueSealer is the queue's side of the archive guard (the spec's
// "Archiving over a queued message is refused"): SealQueue closes the
// session's queue for one archive attempt, so nothing is enqueued between
// the check and the commit, and says whether the archive may go ahead;
// UnsealQueue reopens it when that attempt does not commit.
type QueueSealer interface {
	SealQueue(ctx context.Context, sessionID int64, attemptID string, force bool) (QueueSeal, error)
	UnsealQueue(ctx context.Context, sessionID int64, attemptID string) error
}

// QueueSeal is the queue's answer to a seal.
type QueueSeal struct {
	// Refusal, when set, refuses the archive in the queue's words (the
	// queue is not empty and force was not given); the queue has already
	// unsealed.
	Refusal string
	// RetirementClause is what the archive line adds about the messages the
	// archive retires ("" when none).
	RetirementClause string
}

// unsealTimeout bounds the unseal after an archive that did not commit:
// it runs even when the caller has gone, and the queue's stale-seal sweep
// lifts a seal it could not.
const unsealTimeout = 10 * time.Second

// archive is the archive use case — ArchiveSession, BulkArchiveSessions
// (per session) and the self_session archive: the queue's guard first,
// then the halt of a running turn, then the transition. Seal before
// anything else, so a refusal interrupts nothing; the session is archived
// by the id sealed, so the session checked is the session archived; and an
// archive that does not commit (refused by the machine, failed) unseals.
// With no queue configured it is the halt and the transition alone. The
// raw archive event (Fire) is the system archive and asks no queue.
func (uc TransitionSession) archive(ctx context.Context, ref string, cmd domain.Command) (domain.Outcome, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Outcome{}, err
	}
	if err := cmd.Validate(); err != nil {
		return domain.Outcome{}, err
	}
	s, err := uc.Repo.Get(ctx, r)
	if err != nil {
		return domain.Outcome{}, err
	}
	unseal := func() {}
	// An archived session's queue was sealed by its retirement; the
	// machine refuses the archive below without touching it.
	if uc.Queue != nil && s.Status != domain.StatusArchived {
		attempt := uuid.NewString()
		seal, err := uc.Queue.SealQueue(ctx, s.ID, attempt, cmd.Force)
		if err != nil {
			return domain.Outcome{}, fmt.Errorf("the queue did not answer, so session %d's queued messages could not be checked and it was not archived; retry shortly: %w (%w)",
				s.ID, domain.ErrUnavailable, err)
		}
		if seal.Refusal != "" {
			reason := seal.Refusal
			if cmd.Actor.Bulk {
				reason += domain.BulkForceNote
			}
			return domain.Outcome{}, &domain.PreconditionError{Reason: reason}
		}
		cmd.RetirementClause, cmd.ArchiveAttempt = seal.RetirementClause, attempt
		unseal = func() { uc.unseal(ctx, s.ID, attempt) }
	}
	if err := uc.halt(ctx, s, Verb(domain.EventArchive)); err != nil {
		unseal()
		return domain.Outcome{}, err
	}
	cmd.Event = domain.EventArchive
	out, err := uc.apply(ctx, domain.SessionRef{ID: s.ID}, cmd.Actor.By, func(s domain.Session, env domain.Env) (domain.Outcome, error) {
		return domain.Apply(s, cmd, env)
	})
	if err != nil {
		unseal()
		return domain.Outcome{}, err
	}
	return out, nil
}

// unseal lifts this attempt's seal of the session's queue after an archive
// that did not commit, even when the caller has hung up.
func (uc TransitionSession) unseal(ctx context.Context, sessionID int64, attemptID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unsealTimeout)
	defer cancel()
	if err := uc.Queue.UnsealQueue(ctx, sessionID, attemptID); err != nil {
		slog.WarnContext(ctx, "an archive that did not commit left the session's queue sealed; the queue's stale-seal sweep will lift it",
			"session_id", sessionID, "attempt_id", attemptID, "error", err)
	}
}
