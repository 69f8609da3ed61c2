// Package service is the notification's composition root, the only package that
// knows every adapter; main and the component tests build the service here.
package service

import (
	"context"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/config"
	"github.com/zimmerhq/zimmer/services/notification/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/notification/internal/pager"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/notification/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// Name is the service's name: its log field, Temporal task queue
// (zimmer-notification) and default database (zimmer_notification).
const Name = "notification"

// MigrationSets is the notification database's schema, in the order it is applied.
var MigrationSets = []pgdb.MigrationSet{inbox.Migrations, outbox.Migrations, store.Migrations}

// Service is a runnable notification service: the platform host (Run, Close, Addr,
// and the Pool and Temporal client tests reach for) with the notification's
// adapters registered on it.
type Service struct {
	*host.Host
	Alerts app.Alerts
}

// New migrates the database, opens the pool, listens for gRPC, connects the
// Temporal worker when cfg names a server, and registers the notification API. Run
// starts it; Close releases it. An AlertDedupWindow of zero means
// domain.DefaultDedupWindow.
//
// With Temporal, an opened alert pages through a workflow delivering to
// every sink of the alert route (pager.Temporal); without it, or when a
// workflow cannot start, it pages to the log (pager.Log).
func New(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Service, error) {
	routes, err := sink.New(cfg.Sinks, logger)
	if err != nil {
		return nil, err
	}
	h, err := host.New(ctx, Name, cfg.Config, logger, MigrationSets...)
	if err != nil {
		return nil, err
	}
	var page app.Pager = pager.Log{Logger: logger}
	if h.Worker != nil {
		pager.Register(h.Worker, routes.Alert)
		page = pager.NewTemporal(h.Temporal, Name, routes.Alert, page, logger)
	}
	svc := &Service{
		Host:   h,
		Alerts: app.NewAlerts(store.NewAlerts(h.Pool), page, clock.System{}, cfg.AlertDedupWindow),
	}
	grpcapi.NewServer(svc.Alerts, logger).Register(h.GRPC.Server)
	return svc, nil
}
