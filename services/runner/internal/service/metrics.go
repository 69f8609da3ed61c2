package service

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/metrics"
	"github.com/zimmerhq/zimmer/services/runner/internal/grpcapi"
)

// observeAccounts reports the login pools on every scrape (RN-36, PL-24):
// per account, whether it has capacity now (1) or rests (0), and how many
// sessions are parked on it.
func observeAccounts(pool grpcapi.AccountLister, logger *slog.Logger) error {
	m := metrics.Meter()
	available, err := m.Int64ObservableGauge("zimmer.runner.accounts.available", metric.WithUnit("{account}"),
		metric.WithDescription("1 while the login has capacity for a turn, 0 while it rests after a wall or is at its quota targets."))
	if err != nil {
		return err
	}
	parked, err := m.Int64ObservableGauge("zimmer.runner.accounts.parked", metric.WithUnit("{session}"),
		metric.WithDescription("Sessions parked on the login until it refills."))
	if err != nil {
		return err
	}
	return metrics.Observe(logger, func(ctx context.Context, o metric.Observer) error {
		states, err := pool.List(ctx, rules.AgentRuntimes(), time.Now())
		if err != nil {
			return err
		}
		for _, st := range states {
			attrs := metric.WithAttributes(attribute.String("runtime", st.Use.Account.Runtime), attribute.String("account", st.Use.Account.Name))
			var n int64
			if st.Use.HasCapacity(st.Now) {
				n = 1
			}
			o.ObserveInt64(available, n, attrs)
			o.ObserveInt64(parked, int64(st.Parked), attrs)
		}
		return nil
	}, available, parked)
}
