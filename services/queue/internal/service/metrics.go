package service

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/metric"

	"github.com/zimmerhq/zimmer/services/platform/metrics"
	"github.com/zimmerhq/zimmer/services/queue/internal/store"
)

// observeBacklog reports the queue's depth and the age of its oldest
// pending message on every scrape (PL-24).
func observeBacklog(messages *store.Messages, logger *slog.Logger) error {
	m := metrics.Meter()
	depth, err := m.Int64ObservableGauge("zimmer.queue.pending", metric.WithUnit("{message}"),
		metric.WithDescription("Messages waiting in sessions' queues."))
	if err != nil {
		return err
	}
	oldest, err := m.Float64ObservableGauge("zimmer.queue.oldest_pending_age", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest message waiting in any session's queue has waited."))
	if err != nil {
		return err
	}
	return metrics.Observe(logger, func(ctx context.Context, o metric.Observer) error {
		b, err := messages.PendingBacklog(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(depth, b.Pending)
		o.ObserveFloat64(oldest, b.OldestAge.Seconds())
		return nil
	}, depth, oldest)
}
