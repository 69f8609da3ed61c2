package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// Deliver claims a pending message of the session (FOR UPDATE SKIP LOCKED,
// so two deliverers never take the same one), sends it, and marks it sent,
// all in one transaction: the queue's outermost, so a send that fails or
// refuses leaves the message pending exactly as it was. delivered is false
// when there was nothing to claim (an empty or sealed queue) or send
// refused. A named message that is not pending is domain.ErrNotPending (or
// ErrNotFound, or ErrSealed).
func (s *Messages) Deliver(ctx context.Context, sessionID int64, pick domain.Pick, send domain.Send) (m domain.Message, delivered bool, err error) {
	var undeliverable *domain.UndeliverableError
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var claimed bool
		if pick.MessageID == 0 {
			m, claimed, err = s.ClaimNext(ctx, tx, sessionID)
		} else {
			m, claimed, err = s.claimMessage(ctx, tx, sessionID, pick.MessageID)
		}
		if err != nil || !claimed {
			return err
		}
		jobID, ok, err := send(ctx, m)
		var never *domain.UndeliverableError
		if errors.As(err, &never) {
			// It can never be a turn: it leaves the queue, saying why, and
			// the error says so once this is committed.
			undeliverable = never
			return s.markUndelivered(ctx, tx, m, never.Reason)
		}
		if err != nil {
			return err
		}
		if !ok {
			return errRefused
		}
		if err := s.markSent(ctx, tx, m, jobID, pick.HandedOverFrom); err != nil {
			return err
		}
		m, err = scanMessage(tx.QueryRow(ctx, `SELECT `+messageColumns+` FROM enqueued_messages WHERE id = $1`, m.ID))
		delivered = err == nil
		return err
	})
	if errors.Is(err, errRefused) {
		return domain.Message{}, false, nil
	}
	if err != nil {
		return domain.Message{}, false, fmt.Errorf("deliver from session %d's queue: %w", sessionID, err)
	}
	if undeliverable != nil {
		return domain.Message{}, false, undeliverable
	}
	return m, delivered, nil
}

// markUndelivered ends the claimed message m undelivered for reason, inside
// the claiming tx; the messages behind it move up.
func (s *Messages) markUndelivered(ctx context.Context, tx pgx.Tx, m domain.Message, reason string) error {
	now := s.clock.Now()
	tag, err := tx.Exec(ctx, `UPDATE enqueued_messages
		SET status = 'undelivered', undelivered_at = $2, updated_at = $2, undelivered_reason = $3
		WHERE id = $1 AND status = 'processing'`, m.ID, now, reason)
	if err != nil {
		return fmt.Errorf("mark message %d undelivered: %w", m.ID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("mark message %d undelivered: %w", m.ID, domain.ErrNotPending)
	}
	return closeGaps(ctx, tx, m.SessionID, now)
}

// undeliver ends every live message of the session undelivered for reason,
// inside tx (which holds the session's queue lock), and returns them.
func undeliver(ctx context.Context, tx pgx.Tx, sessionID int64, now time.Time, reason string) ([]domain.Message, error) {
	return collectMessages(tx.Query(ctx, `UPDATE enqueued_messages
		SET status = 'undelivered', undelivered_at = $2, updated_at = $2, undelivered_reason = $3
		WHERE session_id = $1 AND status IN ('pending', 'processing')
		RETURNING `+messageColumns, sessionID, now, reason))
}

// Abandon ends every live message of a session that no longer exists
// undelivered for reason, and returns them in the order they held. The
// queue stays open: a session id is never reused, so nothing queues onto it
// again (lifecycle refuses it). Idempotent.
func (s *Messages) Abandon(ctx context.Context, sessionID int64, reason string) ([]domain.Message, error) {
	var gone []domain.Message
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, sessionID, "FOR UPDATE"); err != nil {
			return err
		}
		var err error
		gone, err = undeliver(ctx, tx, sessionID, s.clock.Now(), reason)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("abandon session %d's queue: %w", sessionID, err)
	}
	slices.SortFunc(gone, func(a, b domain.Message) int { return cmp.Compare(a.Position, b.Position) })
	return gone, nil
}

// errRefused rolls a delivery's transaction back when send refused.
var errRefused = errors.New("the session refused the delivery")

// HandedOver is the message a turn-end drain already handed over from the
// turn fromJobID, if any: the answer a retried drain gets again.
func (s *Messages) HandedOver(ctx context.Context, sessionID int64, fromJobID string) (domain.Message, bool, error) {
	m, err := scanMessage(s.db(ctx).QueryRow(ctx, `SELECT `+messageColumns+` FROM enqueued_messages
		WHERE session_id = $1 AND handed_over_from = $2`, sessionID, fromJobID))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Message{}, false, nil
	}
	if err != nil {
		return domain.Message{}, false, fmt.Errorf("find the message handed over from %s: %w", fromJobID, err)
	}
	return m, true, nil
}

// claimMessage claims one named pending message, like ClaimNext.
func (s *Messages) claimMessage(ctx context.Context, tx pgx.Tx, sessionID, id int64) (domain.Message, bool, error) {
	var by *string
	err := tx.QueryRow(ctx, `SELECT sealed_by FROM session_queues WHERE session_id = $1 FOR NO KEY UPDATE`, sessionID).Scan(&by)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return domain.Message{}, false, domain.ErrNotFound
	case err != nil:
		return domain.Message{}, false, fmt.Errorf("lock session %d's queue: %w", sessionID, err)
	case by != nil:
		return domain.Message{}, false, domain.ErrSealed
	}
	now := s.clock.Now()
	m, err := scanMessage(tx.QueryRow(ctx, `UPDATE enqueued_messages SET status = 'processing', claimed_at = $3, updated_at = $3
		WHERE id = (SELECT id FROM enqueued_messages WHERE session_id = $1 AND id = $2 AND status = 'pending'
		            FOR UPDATE SKIP LOCKED)
		RETURNING `+messageColumns, sessionID, id, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Message{}, false, checkPending(ctx, tx, sessionID, id, pending{})
	}
	if err != nil {
		return domain.Message{}, false, fmt.Errorf("claim message %d: %w", id, err)
	}
	return m, true, nil
}

// markSent records, inside the claiming tx (which holds the session's queue
// lock), that the claimed message became the turn jobID; the messages
// behind it move up. It records the hand-over from handedOverFrom unless
// jobID is that turn itself: the message was made that turn before (its
// answer lost) and is not what follows it (domain.Pick).
func (s *Messages) markSent(ctx context.Context, tx pgx.Tx, m domain.Message, jobID, handedOverFrom string) error {
	now := s.clock.Now()
	tag, err := tx.Exec(ctx, `UPDATE enqueued_messages
		SET status = 'sent', sent_at = $2, updated_at = $2, delivered_job_id = nullif($3, ''),
		    handed_over_from = CASE WHEN $4 = $3 THEN NULL ELSE nullif($4, '') END
		WHERE id = $1 AND status = 'processing'`, m.ID, now, jobID, handedOverFrom)
	if err != nil {
		return fmt.Errorf("mark message %d sent: %w", m.ID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("mark message %d sent: %w", m.ID, domain.ErrNotPending)
	}
	return closeGaps(ctx, tx, m.SessionID, now)
}

// LockForInterrupt runs fn holding the session's queue lock against every
// other interrupt and change of its order (not against claims): interrupts
// of one session are served one at a time, in the order they take it.
func (s *Messages) LockForInterrupt(ctx context.Context, sessionID int64, fn func(ctx context.Context) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire a connection: %w", err)
	}
	defer conn.Release()
	// An advisory lock rather than the queue's row lock: the interrupt's
	// own delivery claims its message in a transaction of its own, which the
	// row lock would block, and claims by the turn-end drain go on meanwhile.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, interruptLockClass, sessionID); err != nil {
		return fmt.Errorf("take session %d's interrupt lock: %w", sessionID, err)
	}
	defer func() {
		// A fresh context: the lock must go back even when ctx is done.
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, $2)`, interruptLockClass, sessionID)
	}()
	// The work under the lock runs on this same connection (Messages.db):
	// with more interrupts waiting than the pool has connections, each
	// waiter holds one, and a second connection for the holder's delivery
	// would never come.
	return fn(context.WithValue(ctx, lockedConnKey{}, conn))
}

// interruptLockClass is the first key of the queue's advisory locks:
// interrupts, keyed by session in the second.
const interruptLockClass = 7012
