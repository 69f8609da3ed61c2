package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// Seal closes the session's queue to new messages and to delivery on
// behalf of one archive attempt (by names it), and returns the live
// messages the archive would discard, in delivery order: the guard's
// refusal and the archive line are written from them, and nothing can
// change them while the seal holds. Sealing again with the same by is a
// no-op that returns the same messages; another attempt's seal refuses with
// domain.ErrArchiveInProgress. A retirement's seal whose unarchive has not
// reached the queue yet is taken over.
//
// The seal commits first, so no new claim starts, and then the live
// messages are read once the delivery in flight, if any, has settled (sent,
// or pending again): none of them is half delivered.
func (s *Messages) Seal(ctx context.Context, sessionID int64, by string) ([]domain.Message, error) {
	if by == "" || by == RetiredSeal {
		return nil, fmt.Errorf("seal: the archive attempt must be named, and not %q", RetiredSeal)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		sealedBy, err := lockSession(ctx, tx, sessionID, "FOR UPDATE")
		if err != nil {
			return err
		}
		switch sealedBy {
		case by:
		case "":
			if _, err := tx.Exec(ctx, `UPDATE session_queues SET sealed_at = $2, sealed_by = $3 WHERE session_id = $1`,
				sessionID, s.clock.Now(), by); err != nil {
				return fmt.Errorf("seal: %w", err)
			}
		case RetiredSeal:
			// An archive retired this queue, and lifecycle — which seals only
			// a session that is not archived — has unarchived it since; the
			// unarchive's reopening has not arrived yet. Sealing stands in
			// for it: the earlier archive's retirement, should it come again,
			// predates this reopening and retires nothing.
			now := s.clock.Now()
			if _, err := tx.Exec(ctx, `UPDATE session_queues SET sealed_at = $2, sealed_by = $3,
				reopened_at = greatest(reopened_at, $2) WHERE session_id = $1`, sessionID, now, by); err != nil {
				return fmt.Errorf("seal: %w", err)
			}
		default:
			return domain.ErrArchiveInProgress
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("seal session %d's queue: %w", sessionID, err)
	}
	var live []domain.Message
	err = s.afterClaims(ctx, func(tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, sessionID, "FOR UPDATE"); err != nil {
			return err
		}
		if err := noClaimInFlight(ctx, tx, sessionID); err != nil {
			return err
		}
		var err error
		live, err = collectMessages(tx.Query(ctx, `SELECT `+messageColumns+` FROM enqueued_messages
			WHERE session_id = $1 AND status IN ('pending', 'processing') ORDER BY position`, sessionID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read sealed session %d's queue: %w", sessionID, err)
	}
	return live, nil
}

// Unseal reopens the queue sealed by by: the archive did not commit, or
// the session was unarchived. Retired messages stay undelivered. Unsealing
// a queue that by does not hold is a no-op, so a late unseal from an
// abandoned attempt never opens a queue another archive sealed.
func (s *Messages) Unseal(ctx context.Context, sessionID int64, by string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE session_queues SET sealed_at = NULL, sealed_by = NULL
		WHERE session_id = $1 AND sealed_by = $2 AND sealed_by <> $3`, sessionID, by, RetiredSeal); err != nil {
		return fmt.Errorf("unseal session %d's queue: %w", sessionID, err)
	}
	return nil
}

// RetiredSeal is the seal Retire leaves: the archive has committed, so no
// attempt is left to undo it; only Reopen (an unarchive) lifts it.
const RetiredSeal = "retired"

// Retire seals the session's queue (taking over any attempt's seal) and
// moves every live message to undelivered, returning them in the order
// they held. Call it only once the archive of archivedAt has committed; it
// is idempotent, so the archive's effect may be redelivered. An archive
// already undone by an unarchive (its effect arriving after the unarchive's)
// retires nothing and leaves the queue open: attempt names the seal that
// archive was checked under, which the unarchive's Reopen could not lift
// (it lifts only RetiredSeal) when it arrived first, so Retire lifts it
// here — that seal's archive is over — and never another attempt's.
func (s *Messages) Retire(ctx context.Context, sessionID int64, archivedAt time.Time, attempt string) ([]domain.Message, error) {
	var retired []domain.Message
	err := s.afterClaims(ctx, func(tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, sessionID, "FOR UPDATE"); err != nil {
			return err
		}
		if err := noClaimInFlight(ctx, tx, sessionID); err != nil {
			return err
		}
		var reopened *time.Time
		if err := tx.QueryRow(ctx, `SELECT reopened_at FROM session_queues WHERE session_id = $1`, sessionID).Scan(&reopened); err != nil {
			return fmt.Errorf("read the queue's reopening: %w", err)
		}
		if reopened != nil && !archivedAt.IsZero() && !reopened.Before(archivedAt) {
			if attempt == "" || attempt == RetiredSeal {
				return nil
			}
			if _, err := tx.Exec(ctx, `UPDATE session_queues SET sealed_at = NULL, sealed_by = NULL
				WHERE session_id = $1 AND sealed_by = $2`, sessionID, attempt); err != nil {
				return fmt.Errorf("lift the undone archive's seal: %w", err)
			}
			return nil
		}
		if attempt != "" && attempt != RetiredSeal {
			// Another archive attempt's seal: lifecycle seals only a session
			// that is not archived, so this retirement's archive was undone
			// before that attempt sealed, whatever the reopening's arrival.
			var sealedBy *string
			if err := tx.QueryRow(ctx, `SELECT sealed_by FROM session_queues WHERE session_id = $1`, sessionID).Scan(&sealedBy); err != nil {
				return fmt.Errorf("read the queue's seal: %w", err)
			}
			if sealedBy != nil && *sealedBy != attempt && *sealedBy != RetiredSeal {
				return nil
			}
		}
		now := s.clock.Now()
		if _, err := tx.Exec(ctx, `UPDATE session_queues SET sealed_at = coalesce(sealed_at, $2), sealed_by = $3
			WHERE session_id = $1`, sessionID, now, RetiredSeal); err != nil {
			return fmt.Errorf("seal: %w", err)
		}
		var err error
		retired, err = undeliver(ctx, tx, sessionID, now, domain.ReasonArchived)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("retire session %d's queue: %w", sessionID, err)
	}
	slices.SortFunc(retired, func(a, b domain.Message) int { return cmp.Compare(a.Position, b.Position) })
	return retired, nil
}

// Reopen lifts the retirement's seal and records when the session was
// unarchived (unarchivedAt); an archive attempt's seal, a newer archive's,
// stays. Messages retired to
// undelivered stay undelivered: unarchive never revives them.
func (s *Messages) Reopen(ctx context.Context, sessionID int64, unarchivedAt time.Time) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, sessionID, "FOR UPDATE"); err != nil {
			return err
		}
		// Only the retirement's seal: an archive attempt in flight (a new
		// archive after this unarchive) keeps its own.
		_, err := tx.Exec(ctx, `UPDATE session_queues SET
			sealed_at = CASE WHEN sealed_by = $3 THEN NULL ELSE sealed_at END,
			sealed_by = CASE WHEN sealed_by = $3 THEN NULL ELSE sealed_by END,
			reopened_at = greatest(reopened_at, $2) WHERE session_id = $1`, sessionID, unarchivedAt, RetiredSeal)
		return err
	})
	if err != nil {
		return fmt.Errorf("reopen session %d's queue: %w", sessionID, err)
	}
	return nil
}
