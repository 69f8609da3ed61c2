package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// ErrSealedByAnother: another archive attempt holds the seal.
var ErrSealedByAnother = errors.New("the session's queue is sealed by another archive attempt")

// Seal closes the session's queue to new messages and to delivery on
// behalf of one archive attempt (by names it), and returns the live
// messages the archive would discard, in delivery order: the guard's
// refusal and the archive line are written from them, and nothing can
// change them while the seal holds. Sealing waits for every claim in flight
// to commit or roll back. Sealing again with the same by is a no-op that
// returns the same messages; another attempt's seal refuses with
// ErrSealedByAnother.
func (s *Messages) Seal(ctx context.Context, sessionID int64, by string) ([]domain.Message, error) {
	if by == "" {
		return nil, errors.New("seal: the archive attempt must be named")
	}
	var live []domain.Message
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		sealedBy, err := lockSession(ctx, tx, sessionID, "FOR UPDATE")
		if err != nil {
			return err
		}
		if sealedBy != "" && sealedBy != by {
			return ErrSealedByAnother
		}
		if sealedBy == "" {
			if _, err := tx.Exec(ctx, `UPDATE session_queues SET sealed_at = $2, sealed_by = $3 WHERE session_id = $1`,
				sessionID, s.clock.Now(), by); err != nil {
				return fmt.Errorf("seal: %w", err)
			}
		}
		live, err = collectMessages(tx.Query(ctx, `SELECT `+messageColumns+` FROM enqueued_messages
			WHERE session_id = $1 AND status IN ('pending', 'processing') ORDER BY position`, sessionID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("seal session %d's queue: %w", sessionID, err)
	}
	return live, nil
}

// Unseal reopens the queue sealed by by: the archive did not commit, or
// the session was unarchived. Retired messages stay undelivered. Unsealing
// a queue that by does not hold is a no-op, so a late unseal from an
// abandoned attempt never opens a queue another archive sealed.
func (s *Messages) Unseal(ctx context.Context, sessionID int64, by string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE session_queues SET sealed_at = NULL, sealed_by = NULL
		WHERE session_id = $1 AND sealed_by = $2`, sessionID, by); err != nil {
		return fmt.Errorf("unseal session %d's queue: %w", sessionID, err)
	}
	return nil
}

// Retire seals the session's queue (on behalf of by, taking over any
// other seal: the archive has committed, so no attempt is left to undo) and
// moves every live message to undelivered, returning them in the order they
// held. Call it only once the archive has committed; it is idempotent, so
// the archived event may be redelivered.
func (s *Messages) Retire(ctx context.Context, sessionID int64, by string) ([]domain.Message, error) {
	var retired []domain.Message
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, sessionID, "FOR UPDATE"); err != nil {
			return err
		}
		now := s.clock.Now()
		if _, err := tx.Exec(ctx, `UPDATE session_queues SET sealed_at = coalesce(sealed_at, $2), sealed_by = $3
			WHERE session_id = $1`, sessionID, now, by); err != nil {
			return fmt.Errorf("seal: %w", err)
		}
		var err error
		retired, err = collectMessages(tx.Query(ctx, `UPDATE enqueued_messages
			SET status = 'undelivered', undelivered_at = $2, updated_at = $2
			WHERE session_id = $1 AND status IN ('pending', 'processing')
			RETURNING `+messageColumns, sessionID, now))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("retire session %d's queue: %w", sessionID, err)
	}
	slices.SortFunc(retired, func(a, b domain.Message) int { return cmp.Compare(a.Position, b.Position) })
	return retired, nil
}
