package store

import (
	"context"
	"fmt"
	"time"
)

// pruneBatch bounds one DELETE of a prune, so a large backlog never holds
// one long transaction.
const pruneBatch = 1000

// PruneDeliveries deletes the records that answer retries — deliveries
// and transitions applied under an idempotency key — made before cutoff,
// and returns how many it deleted. A retry comes within minutes; a
// week-old record answers nothing any more.
func (s *Sessions) PruneDeliveries(ctx context.Context, cutoff time.Time) (int64, error) {
	var total int64
	for _, q := range []struct{ what, sql string }{
		{"deliveries", `DELETE FROM deliveries WHERE delivery_id IN (
			SELECT delivery_id FROM deliveries WHERE created_at < $1 LIMIT $2)`},
		{"applied transitions", `DELETE FROM applied_transitions WHERE idempotency_key IN (
			SELECT idempotency_key FROM applied_transitions WHERE created_at < $1 LIMIT $2)`},
	} {
		for {
			tag, err := s.pool.Exec(ctx, q.sql, cutoff, pruneBatch)
			if err != nil {
				return total, fmt.Errorf("prune %s applied before %s: %w", q.what, cutoff.Format(time.RFC3339), err)
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < pruneBatch {
				break
			}
		}
	}
	return total, nil
}
