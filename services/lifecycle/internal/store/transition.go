package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
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
		cur, err := s.lock(ctx, tx, ref)
		if err != nil {
			return err
		}
		wakes, err := armedWakes(ctx, tx, cur.ID)
		if err != nil {
			return err
		}
		if out, err = decide(cur, wakes); err != nil {
			return err
		}
		if err := s.save(ctx, tx, out.Session); err != nil {
			return err
		}
		if hasEffect(out, domain.EffectRecordFlags) {
			s.recordFlags(ctx, tx, out.Session)
		}
		if err := writeTimeline(ctx, tx, cur.ID, out.Session.UpdatedAt, out.Timeline); err != nil {
			return err
		}
		if err := writeStream(ctx, tx, out); err != nil {
			return err
		}
		out.Session.Version = cur.Version + 1
		return s.record(ctx, tx, []domain.Fact{domain.SessionTransitioned{Session: out.Session, Outcome: out}})
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

func (s *Sessions) lock(ctx context.Context, tx pgx.Tx, ref domain.SessionRef) (domain.Session, error) {
	var row pgx.Row
	if ref.Slug != "" {
		row = tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE slug = $1 FOR UPDATE`, ref.Slug)
	} else {
		row = tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1 FOR UPDATE`, ref.ID)
	}
	sess, err := scanSession(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Session{}, &domain.NotFoundError{Ref: ref}
	}
	if err != nil {
		return domain.Session{}, fmt.Errorf("lock session %s: %w", ref, err)
	}
	return sess, nil
}

func armedWakes(ctx context.Context, tx pgx.Tx, sessionID int64) (domain.Wakes, error) {
	var w domain.Wakes
	err := tx.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE kind = 'one_time'), count(*) FILTER (WHERE kind = 'session_state')
		FROM wake_triggers WHERE session_id = $1`, sessionID).Scan(&w.OneTime, &w.Watchers)
	if err != nil {
		return domain.Wakes{}, fmt.Errorf("read wakes of session %d: %w", sessionID, err)
	}
	return w, nil
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

func writeStream(ctx context.Context, tx pgx.Tx, out domain.Outcome) error {
	sess := out.Session
	applied := make([]string, len(out.Applied))
	for i, e := range out.Applied {
		applied[i] = string(e)
	}
	entries := []domain.Effect{{Name: "transition", Payload: map[string]any{
		"from": out.From.String(), "to": sess.Status.String(), "events": applied,
	}}}
	for _, e := range append(entries, out.Effects...) {
		payload, err := json.Marshal(e.Payload)
		if err != nil {
			return fmt.Errorf("encode effect %s: %w", e.Name, err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO session_events (event_id, session_id, name, alerting, payload, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`,
			uuid.NewString(), sess.ID, e.Name, e.Alerting(), payload, sess.UpdatedAt); err != nil {
			return fmt.Errorf("record effect %s of session %d: %w", e.Name, sess.ID, err)
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
