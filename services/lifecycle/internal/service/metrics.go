package service

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
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

// observeSlots reports the turn slots on every scrape (LC-36, PL-24): the
// limit in force (absent while unlimited), the slots in use, the turns
// waiting for one and the spot sleepers in line.
func observeSlots(slots app.Slots, logger *slog.Logger) error {
	m := metrics.Meter()
	limit, err := m.Int64ObservableGauge("zimmer.slots.limit", metric.WithUnit("{slot}"),
		metric.WithDescription("The fleet-wide limit of concurrently running turns; no sample while unlimited."))
	if err != nil {
		return err
	}
	inUse, err := m.Int64ObservableGauge("zimmer.slots.in_use", metric.WithUnit("{slot}"),
		metric.WithDescription("Turn slots held by running turns."))
	if err != nil {
		return err
	}
	waiting, err := m.Int64ObservableGauge("zimmer.slots.waiting", metric.WithUnit("{session}"),
		metric.WithDescription("Sessions in line for a slot, by why: a turn waiting (no_slot) or a spot sleeper (spot_queue)."))
	if err != nil {
		return err
	}
	return metrics.Observe(logger, func(ctx context.Context, o metric.Observer) error {
		u, err := slots.Usage(ctx)
		if err != nil {
			return err
		}
		if u.Limit.Slots != nil {
			o.ObserveInt64(limit, int64(*u.Limit.Slots))
		}
		o.ObserveInt64(inUse, int64(u.InUse))
		o.ObserveInt64(waiting, int64(u.WaitingTurns), metric.WithAttributes(attribute.String("reason", rules.SlotWaitNoSlot)))
		o.ObserveInt64(waiting, int64(u.SpotSleepers), metric.WithAttributes(attribute.String("reason", rules.SlotWaitSpotQueue)))
		return nil
	}, limit, inUse, waiting)
}
