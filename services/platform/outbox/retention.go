package outbox

import (
	"context"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/retention"
)

// RetentionPolicy is the outbox's retention.Policy: delivered messages are
// deleted once older than keep (PruneDelivered: never an undelivered,
// leased or dead one), so the outbox holds only what is in flight and
// what is dead. Its schedule is <service>-outbox-retention.
func RetentionPolicy(db pgdb.DBTX, keep time.Duration) retention.Policy {
	return retention.Policy{
		Name: "outbox",
		Keep: keep,
		Prune: func(ctx context.Context, cutoff time.Time) (int64, error) {
			return PruneDelivered(ctx, db, cutoff)
		},
	}
}
