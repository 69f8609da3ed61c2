package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

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

// Events implements app.SessionRepository. The stream has its own table,
// written with each transition, so it outlives the outbox rows that
// delivered the same events.
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
	stream, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.StreamEvent, error) {
		var e domain.StreamEvent
		err := r.Scan(&e.ID, &e.EventID, &e.Name, &e.Alerting, &e.Payload, &e.CreatedAt)
		e.CreatedAt = e.CreatedAt.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read events of session %d: %w", sess.ID, err)
	}
	return stream, nil
}
