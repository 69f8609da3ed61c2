package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// Untouched implements app.SweepCandidates: up to limit sessions, the
// longest untouched first, last updated before cutoff and neither running
// nor archived (domain.IsStale, which the sweep checks again under each
// session's lock).
func (s *Sessions) Untouched(ctx context.Context, cutoff time.Time, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id FROM sessions
		WHERE updated_at < $1 AND status NOT IN ($2, $3)
		ORDER BY updated_at, id
		LIMIT $4`, cutoff, domain.StatusRunning, domain.StatusArchived, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions untouched since %s: %w", cutoff.Format(time.RFC3339), err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("list sessions untouched since %s: %w", cutoff.Format(time.RFC3339), err)
	}
	return ids, nil
}

// BlockedOnElicitation implements app.SweepCandidates: up to limit
// needs_input sessions blocked on an elicitation and untouched since
// cutoff, the oldest first (domain.IsStrandedElicitation, which the sweep
// checks again under each session's lock).
func (s *Sessions) BlockedOnElicitation(ctx context.Context, cutoff time.Time, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id FROM sessions
		WHERE markers ? 'blocked_on_elicitation' AND updated_at < $1 AND status = $2
		ORDER BY updated_at, id
		LIMIT $3`, cutoff, domain.StatusNeedsInput, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions blocked on an elicitation since %s: %w", cutoff.Format(time.RFC3339), err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("list sessions blocked on an elicitation since %s: %w", cutoff.Format(time.RFC3339), err)
	}
	return ids, nil
}

// HeartbeatDue implements app.SweepCandidates: up to limit needs_input
// sessions with their heartbeat on, not blocked on an elicitation, at rest
// since before cutoff and for their own interval by now, the longest at
// rest first (domain.HeartbeatDue, which the sweep checks again under each
// session's lock).
func (s *Sessions) HeartbeatDue(ctx context.Context, cutoff, now time.Time, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id FROM sessions
		WHERE status = $1 AND heartbeat_enabled AND NOT markers ? 'blocked_on_elicitation'
			AND updated_at < $2 AND updated_at + make_interval(secs => heartbeat_interval_seconds) <= $3
		ORDER BY updated_at, id
		LIMIT $4`, domain.StatusNeedsInput, cutoff, now, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions due a heartbeat: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("list sessions due a heartbeat: %w", err)
	}
	return ids, nil
}
