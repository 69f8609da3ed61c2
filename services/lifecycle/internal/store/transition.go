package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// Transition implements app.SessionRepository. The row lock serializes
// transitions of one session; other sessions are never blocked.
func (s *Sessions) Transition(ctx context.Context, ref domain.SessionRef,
	decide func(domain.Session, domain.Wakes) (domain.Outcome, error),
) (domain.Outcome, error) {
	var (
		out     domain.Outcome
		refused *domain.TransitionError
	)
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		cur, wakes, err := s.lockWithWakes(ctx, tx, ref)
		if err != nil {
			return err
		}
		if out, err = decide(cur, wakes); err != nil {
			return err
		}
		if hasEffect(out, domain.EffectRecordFlags) {
			s.recordFlags(ctx, tx, out.Session)
		}
		out.Session.Version = cur.Version + 1
		var w writes
		if err := w.save(out.Session); err != nil {
			return err
		}
		w.timeline(cur.ID, out.Session.UpdatedAt, out.Timeline)
		if err := w.stream(out); err != nil {
			return err
		}
		if err := w.announce(s.encode, domain.SessionTransitioned{Session: out.Session, Outcome: out}); err != nil {
			return err
		}
		return w.send(ctx, tx)
	})
	if errors.As(err, &refused) {
		// The refusal changed nothing; saying so on the timeline is what
		// lets "why didn't my pause work?" be answered from the session.
		line := domain.TimelineEntry{Kind: domain.TimelineRefusal, Message: "[State Machine] refused: " + refused.Error()}
		if werr := writeTimeline(ctx, s.pool, refused.SessionID, s.clock.Now(), []domain.TimelineEntry{line}); werr != nil {
			return domain.Outcome{}, errors.Join(err, werr)
		}
	}
	return out, err
}

// lockWithWakes locks the session's row and counts its armed wake-ups in
// one round trip.
func (s *Sessions) lockWithWakes(ctx context.Context, tx pgx.Tx, ref domain.SessionRef) (domain.Session, domain.Wakes, error) {
	where, arg := "id = $1", any(ref.ID)
	if ref.Slug != "" {
		where, arg = "slug = $1", ref.Slug
	}
	var b pgx.Batch
	b.Queue(`SELECT `+sessionColumns+` FROM sessions WHERE `+where+` FOR UPDATE`, arg)
	b.Queue(`
		SELECT count(*) FILTER (WHERE kind = 'one_time'), count(*) FILTER (WHERE kind = 'session_state')
		FROM wake_triggers WHERE session_id = (SELECT id FROM sessions WHERE `+where+`)`, arg)
	br := tx.SendBatch(ctx, &b)
	defer br.Close()
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

func writeTimeline(ctx context.Context, db pgdb.DBTX, sessionID int64, at time.Time, lines []domain.TimelineEntry) error {
	for _, l := range lines {
		if _, err := db.Exec(ctx,
			`INSERT INTO session_timeline (session_id, kind, message, created_at) VALUES ($1, $2, $3, $4)`,
			sessionID, l.Kind, l.Message, at); err != nil {
			return fmt.Errorf("write timeline of session %d: %w", sessionID, err)
		}
	}
	return nil
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
