package service

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/metrics"
)

// observeSessions reports how many sessions are in each status on every
// scrape (zimmer_sessions{status}; PL-24), every status named, zero too,
// so a dashboard's series never vanish.
func observeSessions(repo *store.Sessions, logger *slog.Logger) error {
	gauge, err := metrics.Meter().Int64ObservableGauge("zimmer.sessions", metric.WithUnit("{session}"),
		metric.WithDescription("Sessions in each lifecycle status."))
	if err != nil {
		return err
	}
	return metrics.Observe(logger, func(ctx context.Context, o metric.Observer) error {
		counts, err := repo.CountByStatus(ctx)
		if err != nil {
			return err
		}
		for _, st := range domain.Statuses {
			o.ObserveInt64(gauge, counts[st], metric.WithAttributes(attribute.String("status", st.String())))
		}
		return nil
	}, gauge)
}
