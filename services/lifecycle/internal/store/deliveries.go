package store

import (
	"context"
	"fmt"
	"time"
)

// pruneBatch bounds one DELETE of a prune, so a large backlog never holds
// one long transaction.
const pruneBatch = 1000

// PruneDeliveries deletes the records of deliveries applied before cutoff
// and returns how many it deleted. A delivery is retried within minutes;
// a week-old record answers nothing any more.
func (s *Sessions) PruneDeliveries(ctx context.Context, cutoff time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `
			DELETE FROM deliveries WHERE delivery_id IN (
				SELECT delivery_id FROM deliveries WHERE created_at < $1 LIMIT $2)`, cutoff, pruneBatch)
		if err != nil {
			return total, fmt.Errorf("prune deliveries applied before %s: %w", cutoff.Format(time.RFC3339), err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < pruneBatch {
			return total, nil
		}
	}
}
