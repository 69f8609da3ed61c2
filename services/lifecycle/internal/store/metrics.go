package store

import (
	"context"
	"fmt"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// CountByStatus counts the sessions in each status (an index-only read of
// sessions_status_id), for the metrics' sessions gauge.
func (s *Sessions) CountByStatus(ctx context.Context) (map[domain.Status]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT status, count(*) FROM sessions GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count sessions by status: %w", err)
	}
	defer rows.Close()
	counts := map[domain.Status]int64{}
	for rows.Next() {
		var st domain.Status
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("count sessions by status: %w", err)
		}
		counts[st] = n
	}
	return counts, rows.Err()
}
