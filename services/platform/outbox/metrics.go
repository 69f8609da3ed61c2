package outbox

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/zimmerhq/zimmer/services/platform/metrics"
)

// ObserveBacklog reports producer's outbox on every scrape (PL-24), per
// subscriber: the messages waiting for delivery (zimmer_outbox_pending),
// the age of the oldest of them (zimmer_outbox_oldest_pending_age_seconds)
// and the dead letters parked (zimmer_outbox_dead). Each of subscribers
// (the producer's relays) is reported, at zero too, so its series never
// vanish; any other subscriber only while it has rows.
func ObserveBacklog(pool *pgxpool.Pool, producer string, subscribers []string, logger *slog.Logger) error {
	m := metrics.Meter()
	pending, err := m.Int64ObservableGauge("zimmer.outbox.pending", metric.WithUnit("{message}"),
		metric.WithDescription("Events recorded and not yet delivered to the subscriber (dead letters apart)."))
	if err != nil {
		return err
	}
	oldest, err := m.Float64ObservableGauge("zimmer.outbox.oldest_pending_age", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest event waiting for the subscriber has waited."))
	if err != nil {
		return err
	}
	dead, err := m.Int64ObservableGauge("zimmer.outbox.dead", metric.WithUnit("{message}"),
		metric.WithDescription("Events parked as dead letters for the subscriber: nothing retries them."))
	if err != nil {
		return err
	}
	return metrics.Observe(logger, func(ctx context.Context, o metric.Observer) error {
		labels := func(subscriber string) metric.ObserveOption {
			return metric.WithAttributes(attribute.String("producer", producer), attribute.String("subscriber", subscriber))
		}
		// Two reads, each on its partial index: the waiting rows
		// (outbox_messages_pending) and the parked ones (outbox_messages_dead).
		waiting, parked := map[string]int64{}, map[string]int64{}
		for _, sub := range subscribers {
			waiting[sub], parked[sub] = 0, 0
		}
		ages := map[string]float64{}
		rows, err := pool.Query(ctx, `
			SELECT subscriber, count(*), EXTRACT(EPOCH FROM now() - min(created_at))::float8
			FROM outbox_messages WHERE delivered_at IS NULL AND dead_at IS NULL GROUP BY subscriber`)
		if err != nil {
			return fmt.Errorf("read the outbox's backlog: %w", err)
		}
		for rows.Next() {
			var sub string
			var n int64
			var age float64
			if err := rows.Scan(&sub, &n, &age); err != nil {
				rows.Close()
				return fmt.Errorf("read the outbox's backlog: %w", err)
			}
			waiting[sub], ages[sub] = n, max(age, 0)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read the outbox's backlog: %w", err)
		}
		rows, err = pool.Query(ctx, `SELECT subscriber, count(*) FROM outbox_messages WHERE dead_at IS NOT NULL GROUP BY subscriber`)
		if err != nil {
			return fmt.Errorf("read the outbox's dead letters: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var sub string
			var n int64
			if err := rows.Scan(&sub, &n); err != nil {
				return fmt.Errorf("read the outbox's dead letters: %w", err)
			}
			parked[sub] = n
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read the outbox's dead letters: %w", err)
		}
		for sub, n := range waiting {
			o.ObserveInt64(pending, n, labels(sub))
			o.ObserveFloat64(oldest, ages[sub], labels(sub))
		}
		for sub, n := range parked {
			o.ObserveInt64(dead, n, labels(sub))
		}
		return nil
	}, pending, oldest, dead)
}
