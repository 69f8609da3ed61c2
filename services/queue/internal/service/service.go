// Package service is the queue's composition root, the only package that
// knows every adapter; main and the component tests build the service here.
package service

import (
	"context"
	"log/slog"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/queue/internal/app"
	"github.com/zimmerhq/zimmer/services/queue/internal/clients"
	"github.com/zimmerhq/zimmer/services/queue/internal/config"
	"github.com/zimmerhq/zimmer/services/queue/internal/drain"
	"github.com/zimmerhq/zimmer/services/queue/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/queue/internal/store"
)

// Name is the service's name: its log field, Temporal task queue
// (zimmer-queue) and default database (zimmer_queue).
const Name = "queue"

// MigrationSets is the queue database's schema, in the order it is applied.
var MigrationSets = []pgdb.MigrationSet{inbox.Migrations, outbox.Migrations, store.Migrations}

// Service is a runnable queue service: the platform host (Run, Close, Addr,
// and the Pool and Temporal client tests reach for) with the queue's
// adapters registered on it.
type Service struct {
	*host.Host
}

// New migrates the database, opens the pool, listens for gRPC, connects the
// Temporal worker when cfg names a server, dials lifecycle, the runner,
// lineage and notification (lazily: they need not be up yet), and
// registers the queue API and the consumer of lifecycle's queue effects;
// with Temporal it installs the after-pause drain and the stale-seal sweep.
// Run starts it; Close releases it.
func New(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Service, error) {
	h, err := host.New(ctx, Name, cfg.Config, logger, MigrationSets...)
	if err != nil {
		return nil, err
	}
	svc := &Service{Host: h}
	if err := svc.wire(ctx, cfg, logger); err != nil {
		h.Close()
		return nil, err
	}
	return svc, nil
}

func (s *Service) wire(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	lifecycleConn, err := s.Dial(cfg.LifecycleAddr)
	if err != nil {
		return err
	}
	lifecycle := clients.NewLifecycle(lifecycleConn)
	messages := store.NewMessages(s.Pool, clock.System{})
	if err := observeBacklog(messages, logger); err != nil {
		return err
	}
	deps := app.Deps{
		Sessions: lifecycle, Messages: messages, Turns: clients.NewTurns(lifecycleConn),
		Pauser: lifecycle, Timeline: lifecycle, Alerts: alert.Log{Logger: logger}, Logger: logger,
	}
	if cfg.RunnerAddr != "" {
		conn, err := s.Dial(cfg.RunnerAddr)
		if err != nil {
			return err
		}
		deps.Runner = clients.NewRunner(conn)
	}
	if cfg.LineageAddr != "" {
		conn, err := s.Dial(cfg.LineageAddr)
		if err != nil {
			return err
		}
		deps.Uncles = clients.NewLineage(conn)
	}
	if cfg.NotificationAddr != "" {
		conn, err := s.Dial(cfg.NotificationAddr)
		if err != nil {
			return err
		}
		deps.Alerts = alert.Notification{Client: notificationv1.NewNotificationServiceClient(conn)}
	}
	// The drain delivers through two use cases that poke no drain, and the
	// others poke it: the use cases are built without it for the drain,
	// then again with it.
	queue := app.New(deps)
	if s.Temporal != nil {
		starter, err := drain.Install(ctx, s.Temporal, s.Worker, drain.Deps{
			Lifecycle: clients.NewDrainLifecycle(lifecycleConn), Alerts: deps.Alerts,
			Deliverer: drainDeliverer{deliver: queue.DeliverPending, abandon: queue.Abandon},
			Sessions:  clients.NewDrainLifecycle(lifecycleConn), Seals: messages, Claims: messages, Logger: logger, Delay: cfg.DrainDelay,
		})
		if err != nil {
			return err
		}
		deps.Drains = starter
		queue = app.New(deps)
	}
	grpcapi.NewServer(queue, logger).Register(s.GRPC.Server)
	grpcapi.NewConsumer(queue, logger).Register(s.GRPC.Server)
	return nil
}

// drainDeliverer is the drain's Deliverer over the two use cases it runs.
type drainDeliverer struct {
	deliver app.DeliverPending
	abandon app.AbandonQueue
}

func (d drainDeliverer) DeliverPending(ctx context.Context, sessionID int64) (bool, error) {
	return d.deliver.Handle(ctx, sessionID)
}

func (d drainDeliverer) Abandon(ctx context.Context, sessionID int64) (int, error) {
	return d.abandon.Handle(ctx, sessionID)
}
