package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// Leases are how long a claim hides its message from other deliverers, and
// how long an interrupt holds its session. A holder uses at most two thirds
// of its lease for its work (the send; the interrupt's steps), keeping the
// last third to settle, so a live holder never sees its lease taken; one
// that dies holds its session up for the lease's length, no longer.
type Leases struct {
	// Claim is a delivery's lease (default 30s): the send is bounded by 20s.
	Claim time.Duration
	// Interrupt is the session's interrupt lease (default 90s): the work
	// under it, a claim and a delivery included, is bounded by 60s.
	Interrupt time.Duration
}

// DefaultLeases are the leases NewMessages uses.
var DefaultLeases = Leases{Claim: 30 * time.Second, Interrupt: 90 * time.Second}

// budget is the part of lease a holder may work for.
func budget(lease time.Duration) time.Duration { return lease * 2 / 3 }

// settleTimeout bounds a settle (or a release) run after the caller's
// context ended: the claim must not be left to its lease for that alone.
const settleTimeout = 5 * time.Second

// Claim is a message a deliverer holds under a lease: committed as
// processing, so no other deliverer of its session claims anything until
// the claim is settled or its lease ends.
type Claim struct {
	Message domain.Message
	lease   uuid.UUID
	// sendBy is when the send must be over: two thirds into the lease, by
	// this process's clock read before the claim (never later than the
	// database's idea of the lease's end).
	sendBy time.Time
}

// Deliver claims a pending message of the session, sends it with nothing
// open (no transaction, row lock or pinned connection) and settles the
// claim: sent, undelivered (send found it can never be a turn), or back to
// pending exactly as it was (send failed or refused). delivered is false
// when there was nothing to claim (an empty or sealed queue) or send
// refused. A named message that is not pending is domain.ErrNotPending (or
// ErrNotFound, or ErrSealed). send runs under a deadline inside the lease.
//
// Exactly once across two databases with no shared commit: lifecycle
// applies a delivery id once, so a send whose outcome was lost (the answer,
// the settle, or the whole process) leaves the message to be claimed again
// once its lease ends, and that send is answered already_delivered.
func (s *Messages) Deliver(ctx context.Context, sessionID int64, pick domain.Pick, send domain.Send) (domain.Message, bool, error) {
	c, ok, err := s.Claim(ctx, sessionID, pick)
	if err != nil || !ok {
		return domain.Message{}, false, err
	}
	sendCtx, cancel := context.WithDeadline(ctx, c.sendBy)
	jobID, sent, err := send(sendCtx, c.Message)
	cancel()
	// The claim is settled even when ctx has ended: a send that made a turn
	// is recorded, and a failed one gives the message back at once.
	settleCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	var never *domain.UndeliverableError
	switch {
	case errors.As(err, &never):
		// It can never be a turn: it leaves the queue, saying why, and the
		// error says so once that is committed.
		if err := s.MarkUndelivered(settleCtx, c, never.Reason); err != nil {
			return domain.Message{}, false, err
		}
		return domain.Message{}, false, never
	case err != nil:
		return domain.Message{}, false, errors.Join(fmt.Errorf("deliver from session %d's queue: %w", sessionID, err), s.Release(settleCtx, c))
	case !sent:
		return domain.Message{}, false, s.Release(settleCtx, c)
	}
	m, err := s.MarkSent(settleCtx, c, jobID, pick.HandedOverFrom)
	if err != nil {
		return domain.Message{}, false, err
	}
	return m, m.Status == domain.StatusSent, nil
}

// Claim takes the session's first pending message (pick.MessageID 0) or
// the one named, under a lease. While another claim of the session is in
// flight it waits for it to settle or expire (one session's deliveries
// follow each other, as its turns do); an expired claim's message is back
// in line first. ok is false when there is nothing to claim: no queue, an
// empty one, or a sealed one. A named message refuses instead: ErrNotFound,
// ErrSealed, ErrNotPending.
func (s *Messages) Claim(ctx context.Context, sessionID int64, pick domain.Pick) (c Claim, ok bool, err error) {
	named := pick.MessageID != 0
	err = s.afterClaims(ctx, func(tx pgx.Tx) error {
		ok = false
		start := time.Now()
		var by *string
		err := tx.QueryRow(ctx, `SELECT sealed_by FROM session_queues WHERE session_id = $1 FOR NO KEY UPDATE`, sessionID).Scan(&by)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && named:
			return domain.ErrNotFound
		case errors.Is(err, pgx.ErrNoRows):
			return nil // no queue yet
		case err != nil:
			return fmt.Errorf("lock session %d's queue: %w", sessionID, err)
		case by != nil && named:
			return domain.ErrSealed
		case by != nil:
			return nil
		}
		if err := noClaimInFlight(ctx, tx, sessionID); err != nil {
			return err
		}
		lease := uuid.New()
		m, err := scanMessage(tx.QueryRow(ctx, `UPDATE enqueued_messages
			SET status = 'processing', claimed_at = $3, lease_id = $4, lease_expires_at = now() + $5 * interval '1 millisecond'
			WHERE id = (SELECT id FROM enqueued_messages WHERE session_id = $1 AND status = 'pending' AND ($2::bigint = 0 OR id = $2)
			            ORDER BY position LIMIT 1)
			RETURNING `+messageColumns, sessionID, pick.MessageID, s.clock.Now(), lease, s.leases.Claim.Milliseconds()))
		switch {
		case errors.Is(err, pgx.ErrNoRows) && named:
			return checkPending(ctx, tx, sessionID, pick.MessageID, pending{})
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return fmt.Errorf("claim: %w", err)
		}
		c, ok = Claim{Message: m, lease: lease, sendBy: start.Add(budget(s.leases.Claim))}, true
		return nil
	})
	if err != nil {
		return Claim{}, false, fmt.Errorf("claim from session %d's queue: %w", sessionID, err)
	}
	return c, ok, nil
}

// errClaimInFlight: the session has a claim whose lease has not ended; the
// write waits for it (afterClaims).
var errClaimInFlight = errors.New("a delivery of the session is in flight")

// noClaimInFlight, inside a transaction holding the session's queue lock,
// puts an expired claim's message back in line (its holder died or gave
// up: its send is lifecycle's to answer already_delivered if it landed)
// and answers errClaimInFlight while a live claim remains.
func noClaimInFlight(ctx context.Context, tx pgx.Tx, sessionID int64) error {
	if _, err := tx.Exec(ctx, `UPDATE enqueued_messages
		SET status = 'pending', claimed_at = NULL, lease_id = NULL, lease_expires_at = NULL
		WHERE session_id = $1 AND status = 'processing' AND lease_expires_at <= now()`, sessionID); err != nil {
		return fmt.Errorf("put an expired claim back in line: %w", err)
	}
	var live bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM enqueued_messages WHERE session_id = $1 AND status = 'processing')`,
		sessionID).Scan(&live); err != nil {
		return fmt.Errorf("look for a claim in flight: %w", err)
	}
	if live {
		return errClaimInFlight
	}
	return nil
}

// afterClaims runs fn in a transaction of its own, and again, after a
// pause, for as long as fn answers errClaimInFlight: a write that must not
// interleave with a delivery waits for it without holding anything. The
// pauses grow from 5ms to 100ms; a claim is settled within its lease.
func (s *Messages) afterClaims(ctx context.Context, fn func(pgx.Tx) error) error {
	pause := 5 * time.Millisecond
	for {
		err := s.inTx(ctx, fn)
		if !errors.Is(err, errClaimInFlight) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the delivery in flight: %w", ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// MarkSent settles c: its message became the turn jobID; the messages
// behind it move up. It records the hand-over from handedOverFrom unless
// jobID is that turn itself: the message was made that turn before (its
// answer lost) and is not what follows it (domain.Pick). A lease that ran
// out meanwhile does not stop it: lifecycle applies a delivery id once, so
// whoever claims the message after this holder makes the same turn, and
// the message is sent. It returns the message as it now is.
func (s *Messages) MarkSent(ctx context.Context, c Claim, jobID, handedOverFrom string) (domain.Message, error) {
	var m domain.Message
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, c.Message.SessionID, "FOR NO KEY UPDATE"); err != nil {
			return err
		}
		now := s.clock.Now()
		tag, err := tx.Exec(ctx, `UPDATE enqueued_messages
			SET status = 'sent', sent_at = $2, updated_at = $2, delivered_job_id = nullif($3, ''),
			    handed_over_from = CASE WHEN $4 = $3 THEN NULL ELSE nullif($4, '') END,
			    lease_id = NULL, lease_expires_at = NULL
			WHERE id = $1 AND status IN ('pending', 'processing')`, c.Message.ID, now, jobID, handedOverFrom)
		if err != nil {
			return fmt.Errorf("mark sent: %w", err)
		}
		if tag.RowsAffected() == 1 {
			if err := closeGaps(ctx, tx, c.Message.SessionID, now); err != nil {
				return err
			}
		}
		m, err = scanMessage(tx.QueryRow(ctx, `SELECT `+messageColumns+` FROM enqueued_messages WHERE id = $1`, c.Message.ID))
		return err
	})
	if err != nil {
		return domain.Message{}, fmt.Errorf("settle the delivery of message %d: %w", c.Message.ID, err)
	}
	return m, nil
}

// MarkUndelivered settles c: its message can never be a turn and ends
// undelivered for reason; the messages behind it move up. A lease lost
// meanwhile leaves it to the claim's new holder, whose send finds the same.
func (s *Messages) MarkUndelivered(ctx context.Context, c Claim, reason string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, c.Message.SessionID, "FOR NO KEY UPDATE"); err != nil {
			return err
		}
		now := s.clock.Now()
		tag, err := tx.Exec(ctx, `UPDATE enqueued_messages
			SET status = 'undelivered', undelivered_at = $3, updated_at = $3, undelivered_reason = $4,
			    lease_id = NULL, lease_expires_at = NULL
			WHERE id = $1 AND lease_id = $2`, c.Message.ID, c.lease, now, reason)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return closeGaps(ctx, tx, c.Message.SessionID, now)
	})
	if err != nil {
		return fmt.Errorf("mark message %d undelivered: %w", c.Message.ID, err)
	}
	return nil
}

// Release settles c with nothing sent: its message is pending again, as it
// was before the claim, and the session's next delivery may go. A lease
// lost meanwhile is no longer c's to release. If the release itself fails,
// the message waits for the lease to end.
func (s *Messages) Release(ctx context.Context, c Claim) error {
	if _, err := s.pool.Exec(ctx, `UPDATE enqueued_messages
		SET status = 'pending', claimed_at = NULL, lease_id = NULL, lease_expires_at = NULL
		WHERE id = $1 AND lease_id = $2`, c.Message.ID, c.lease); err != nil {
		return fmt.Errorf("release the claim of message %d (it is pending again when its lease ends): %w", c.Message.ID, err)
	}
	return nil
}

// undeliver ends every live message of the session undelivered for reason,
// inside tx (which holds the session's queue lock, with no claim in
// flight), and returns them.
func undeliver(ctx context.Context, tx pgx.Tx, sessionID int64, now time.Time, reason string) ([]domain.Message, error) {
	return collectMessages(tx.Query(ctx, `UPDATE enqueued_messages
		SET status = 'undelivered', undelivered_at = $2, updated_at = $2, undelivered_reason = $3,
		    lease_id = NULL, lease_expires_at = NULL
		WHERE session_id = $1 AND status IN ('pending', 'processing')
		RETURNING `+messageColumns, sessionID, now, reason))
}

// Abandon ends every live message of a session that no longer exists
// undelivered for reason, and returns them in the order they held; a
// delivery in flight settles first. The queue stays open: a session id is
// never reused, so nothing queues onto it again (lifecycle refuses it).
// Idempotent.
func (s *Messages) Abandon(ctx context.Context, sessionID int64, reason string) ([]domain.Message, error) {
	var gone []domain.Message
	err := s.afterClaims(ctx, func(tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, sessionID, "FOR UPDATE"); err != nil {
			return err
		}
		if err := noClaimInFlight(ctx, tx, sessionID); err != nil {
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

// HandedOver is the message a turn-end drain already handed over from the
// turn fromJobID, if any: the answer a retried drain gets again.
func (s *Messages) HandedOver(ctx context.Context, sessionID int64, fromJobID string) (domain.Message, bool, error) {
	m, err := scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM enqueued_messages
		WHERE session_id = $1 AND handed_over_from = $2`, sessionID, fromJobID))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Message{}, false, nil
	}
	if err != nil {
		return domain.Message{}, false, fmt.Errorf("find the message handed over from %s: %w", fromJobID, err)
	}
	return m, true, nil
}

// LockForInterrupt runs fn holding the session's interrupt lease, against
// every other interrupt and turn-end hand-over of the session (not against
// claims: the interrupt's own delivery claims its message like any other,
// and the after-pause drain's claims go on meanwhile): they are served one
// at a time. The lease is a committed row, not a held connection or
// transaction: waiters poll for it, and one whose holder died takes it
// once it expires. fn runs under a deadline inside the lease.
func (s *Messages) LockForInterrupt(ctx context.Context, sessionID int64, fn func(ctx context.Context) error) error {
	lease := uuid.New()
	pause := 5 * time.Millisecond
	var start time.Time
	for {
		start = time.Now()
		took, err := s.takeInterruptLease(ctx, sessionID, lease)
		if err != nil {
			return err
		}
		if took {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for session %d's interrupt lease: %w", sessionID, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
	defer func() {
		// A context of its own: the lease must go back even when ctx is
		// done; if it cannot, it expires.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
		_, _ = s.pool.Exec(rctx, `UPDATE session_queues SET interrupt_lease_id = NULL, interrupt_lease_expires_at = NULL
			WHERE session_id = $1 AND interrupt_lease_id = $2`, sessionID, lease)
	}()
	workCtx, cancel := context.WithDeadline(ctx, start.Add(budget(s.leases.Interrupt)))
	defer cancel()
	return fn(workCtx)
}

// takeInterruptLease takes the session's interrupt lease as lease when
// nobody holds it or its holder's has expired, in one autocommit statement
// (creating the session's queue row on first use).
func (s *Messages) takeInterruptLease(ctx context.Context, sessionID int64, lease uuid.UUID) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO session_queues (session_id, interrupt_lease_id, interrupt_lease_expires_at)
		VALUES ($1, $2, now() + $3 * interval '1 millisecond')
		ON CONFLICT (session_id) DO UPDATE
		SET interrupt_lease_id = excluded.interrupt_lease_id, interrupt_lease_expires_at = excluded.interrupt_lease_expires_at
		WHERE session_queues.interrupt_lease_id IS NULL OR session_queues.interrupt_lease_expires_at <= now()`,
		sessionID, lease, s.leases.Interrupt.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("take session %d's interrupt lease: %w", sessionID, err)
	}
	return tag.RowsAffected() == 1, nil
}
