package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// Transition implements app.SessionRepository. The row lock serializes
// transitions of one session; other sessions are never blocked.
//
// A transition's cost is round trips, so it takes two: BEGIN travels with
// the lock and the wake count, COMMIT with every write (start and resume add
// one for the experimental flags, which must be able to fail alone).
func (s *Sessions) Transition(ctx context.Context, ref domain.SessionRef,
	decide func(domain.Session, domain.Wakes) (domain.Outcome, error),
) (domain.Outcome, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return domain.Outcome{}, fmt.Errorf("acquire a connection: %w", err)
	}
	out, err := s.transition(ctx, conn.Conn(), ref, decide)
	// Released before anything else touches the pool: holding it while
	// waiting for a second connection would deadlock a saturated pool. A
	// connection released inside a transaction is destroyed by the pool, so
	// even a failed ROLLBACK cannot leak an open transaction.
	conn.Release()
	var refused *domain.TransitionError
	if errors.As(err, &refused) {
		// The refusal changed nothing; saying so on the timeline is what
		// lets "why didn't my pause work?" be answered from the session.
		line := domain.TimelineEntry{Kind: domain.TimelineRefusal, Message: "[State Machine] refused: " + refused.Error()}
		var w writes
		w.timeline(refused.SessionID, s.clock.Now(), []domain.TimelineEntry{line})
		if werr := w.send(ctx, s.pool); werr != nil {
			return domain.Outcome{}, errors.Join(err, werr)
		}
	}
	return out, err
}

func (s *Sessions) transition(ctx context.Context, conn *pgx.Conn, ref domain.SessionRef,
	decide func(domain.Session, domain.Wakes) (domain.Outcome, error),
) (out domain.Outcome, err error) {
	defer func() {
		if err != nil && conn.PgConn().TxStatus() != 'I' {
			// Roll back even when the request was cancelled mid-way.
			if _, rbErr := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rbErr != nil {
				err = errors.Join(err, fmt.Errorf("roll back: %w", rbErr))
			}
		}
	}()
	cur, wakes, err := lockWithWakes(ctx, conn, ref, "BEGIN ISOLATION LEVEL READ COMMITTED")
	if err != nil {
		return domain.Outcome{}, err
	}
	if out, err = decide(cur, wakes); err != nil {
		return domain.Outcome{}, err
	}
	if hasEffect(out, domain.EffectRecordFlags) {
		s.recordFlags(ctx, conn, out.Session)
	}
	out.Session.Version = cur.Version + 1
	var w writes
	if err := w.save(out.Session); err != nil {
		return domain.Outcome{}, err
	}
	w.timeline(cur.ID, out.Session.UpdatedAt, out.Timeline)
	if err := w.stream(out); err != nil {
		return domain.Outcome{}, err
	}
	if err := w.announce(s.encode, domain.SessionTransitioned{Session: out.Session, Outcome: out}); err != nil {
		return domain.Outcome{}, err
	}
	w.queue(func(err error) error { return fmt.Errorf("commit transition of session %d: %w", cur.ID, err) }, "COMMIT")
	if err := w.send(ctx, conn); err != nil {
		return domain.Outcome{}, err
	}
	return out, nil
}

// batcher sends pipelined statements; pgx.Tx and *pgx.Conn both do.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// lockWithWakes locks the session's row and counts its armed wake-ups in
// one round trip, after the statements in before (e.g. BEGIN).
func lockWithWakes(ctx context.Context, db batcher, ref domain.SessionRef, before ...string) (domain.Session, domain.Wakes, error) {
	where, arg := "id = $1", any(ref.ID)
	if ref.Slug != "" {
		where, arg = "slug = $1", ref.Slug
	}
	var b pgx.Batch
	for _, stmt := range before {
		b.Queue(stmt)
	}
	b.Queue(`SELECT `+sessionColumns+` FROM sessions WHERE `+where+` FOR UPDATE`, arg)
	b.Queue(`
		SELECT count(*) FILTER (WHERE kind = 'one_time'), count(*) FILTER (WHERE kind = 'session_state')
		FROM wake_triggers WHERE session_id = (SELECT id FROM sessions WHERE `+where+`)`, arg)
	br := db.SendBatch(ctx, &b)
	defer br.Close()
	for _, stmt := range before {
		if _, err := br.Exec(); err != nil {
			return domain.Session{}, domain.Wakes{}, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	sess, err := scanSession(br.QueryRow())
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Session{}, domain.Wakes{}, &domain.NotFoundError{Ref: ref}
	}
	if err != nil {
		return domain.Session{}, domain.Wakes{}, fmt.Errorf("lock session %s: %w", ref, err)
	}
	var w domain.Wakes
	if err := br.QueryRow().Scan(&w.OneTime, &w.Watchers); err != nil {
		return domain.Session{}, domain.Wakes{}, fmt.Errorf("read wakes of session %d: %w", sess.ID, err)
	}
	return sess, w, nil
}

// Timeline implements app.SessionRepository.
func (s *Sessions) Timeline(ctx context.Context, ref domain.SessionRef) ([]domain.TimelineLine, error) {
	sess, err := s.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, kind, message, created_at FROM session_timeline WHERE session_id = $1 ORDER BY id`, sess.ID)
	if err != nil {
		return nil, fmt.Errorf("read timeline of session %d: %w", sess.ID, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.TimelineLine, error) {
		var l domain.TimelineLine
		err := r.Scan(&l.ID, &l.Kind, &l.Message, &l.CreatedAt)
		l.CreatedAt = l.CreatedAt.UTC()
		return l, err
	})
}

// Events implements app.SessionRepository.
func (s *Sessions) Events(ctx context.Context, ref domain.SessionRef) ([]domain.StreamEvent, error) {
	sess, err := s.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, event_id::text, name, alerting, payload, created_at
		FROM session_events WHERE session_id = $1 ORDER BY id`, sess.ID)
	if err != nil {
		return nil, fmt.Errorf("read events of session %d: %w", sess.ID, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.StreamEvent, error) {
		var (
			e       domain.StreamEvent
			payload []byte
		)
		if err := r.Scan(&e.ID, &e.EventID, &e.Name, &e.Alerting, &payload, &e.CreatedAt); err != nil {
			return e, err
		}
		e.CreatedAt = e.CreatedAt.UTC()
		return e, json.Unmarshal(payload, &e.Payload)
	})
}
