package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// pruneBatch bounds one DELETE, so pruning a day of messages never holds a
// long transaction or a large set of row locks against the relays.
const pruneBatch = 5000

// PruneDelivered deletes the messages delivered before cutoff and returns
// how many it deleted. It never deletes an undelivered or dead message:
// the outbox keeps what is in flight and what an operator must look at.
func PruneDelivered(ctx context.Context, db pgdb.DBTX, cutoff time.Time) (int64, error) {
	var total int64
	for {
		tag, err := db.Exec(ctx, `
			DELETE FROM outbox_messages
			WHERE id IN (
				SELECT id FROM outbox_messages
				WHERE delivered_at < $1 AND dead_at IS NULL
				LIMIT $2)`, cutoff, pruneBatch)
		if err != nil {
			return total, fmt.Errorf("prune outbox messages delivered before %s: %w", cutoff.Format(time.RFC3339), err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < pruneBatch {
			return total, nil
		}
	}
}
