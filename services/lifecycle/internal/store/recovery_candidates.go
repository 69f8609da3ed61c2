package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// RecoveryCandidates implements app.RecoveryCandidates.
func (s *Sessions) RecoveryCandidates(ctx context.Context, settledBefore time.Time, limit int) ([]app.RecoveryCandidate, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, status, COALESCE(markers->>'paused_by', ''),
			COALESCE((markers->>'blocked_on_elicitation')::boolean, false),
			COALESCE(markers->>'running_job_id', ''), updated_at
		FROM sessions
		WHERE updated_at < $1
			AND (status = $2 OR (status IN ($3, $4) AND markers->>'paused_by' = $5))
		ORDER BY updated_at, id
		LIMIT $6`, settledBefore, domain.StatusRunning, domain.StatusNeedsInput, domain.StatusWaiting,
		domain.PausedByRecovery, limit)
	if err != nil {
		return nil, fmt.Errorf("list recovery candidates settled before %s: %w", settledBefore.Format(time.RFC3339), err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (app.RecoveryCandidate, error) {
		var c app.RecoveryCandidate
		err := row.Scan(&c.SessionID, &c.Status, &c.PausedBy, &c.BlockedOnElicitation, &c.RunningJobID, &c.UpdatedAt)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list recovery candidates settled before %s: %w", settledBefore.Format(time.RFC3339), err)
	}
	return out, nil
}
