// Package service is lineage's composition root: the only package that
// knows every adapter.
package service

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/clients"
	"github.com/zimmerhq/zimmer/services/lineage/internal/config"
	"github.com/zimmerhq/zimmer/services/lineage/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/lineage/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/retention"
)

// Name is the service's name: its task queue, log field and database suffix.
const Name = config.Service

// MigrationSets is the lineage database's schema, in order: the inbox that
// makes lifecycle's events idempotent, the outbox for the events lineage
// publishes, and its own tables.
var MigrationSets = []pgdb.MigrationSet{inbox.Migrations, outbox.Migrations, store.Migrations}

// Service is a runnable lineage: the host (Run, Close, Addr; a Temporal
// worker when configured, running the outbox retention schedule) with the
// lineage API on its gRPC server and a relay per consumer of its events.
type Service struct {
	*host.Host
	// Relays deliver lineage's events, one per subscriber listed in
	// LINEAGE_EVENT_CONSUMERS, each through LineageEventConsumerService.
	Relays map[string]*outbox.Relay
}

// New is NewWithAdmin with the default admin (ZIMMER_ADMIN_USER unset).
func New(ctx context.Context, cfg host.Config, logger *slog.Logger) (*Service, error) {
	return NewWithAdmin(ctx, cfg, logger, "")
}

// NewWithAdmin is NewFromConfig with adminUser as ZIMMER_ADMIN_USER, the
// roster key web-UI messages are attributed to, and no consumers of
// lineage's events: they wait in the outbox.
func NewWithAdmin(ctx context.Context, cfg host.Config, logger *slog.Logger, adminUser string) (*Service, error) {
	return NewFromConfig(ctx, config.Config{Config: cfg, AdminUser: adminUser}, logger)
}

// NewFromConfig migrates the database, opens the pool, registers the gRPC
// APIs and starts a relay for each consumer in cfg.EventConsumers.
func NewFromConfig(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Service, error) {
	h, err := host.New(ctx, Name, cfg.Config, logger, MigrationSets...)
	if err != nil {
		return nil, err
	}
	svc := &Service{Host: h, Relays: map[string]*outbox.Relay{}}
	// Commits wake this process's relays directly; relays in other
	// processes find the messages by polling.
	signal := &outbox.Signal{}
	repo := store.New(h.Pool).WithSignal(signal)
	lineagev1.RegisterLineageServiceServer(h.GRPC, grpcapi.New(logger,
		app.NewGetSessionNode(repo),
		app.NewGetHierarchy(repo),
		app.NewRecordUncleEdge(repo, clock.System{}),
		app.NewRetractUncleEdge(repo, clock.System{}),
	))
	// Lifecycle's events arrive through the contract every subscriber
	// implements.
	lifecyclev1.RegisterSessionEventConsumerServiceServer(h.GRPC, grpcapi.NewConsumer(logger, app.NewApplySessionEvent(repo)))
	registerProvenance(h.GRPC.Server, h.Pool, logger, app.NewGetHierarchy(repo), cfg.AdminUser)

	var alerts alert.Raiser = alert.Log{Logger: logger}
	if cfg.NotificationAddr != "" && len(cfg.EventConsumers) > 0 {
		conn, err := h.Dial(cfg.NotificationAddr)
		if err != nil {
			h.Close()
			return nil, err
		}
		alerts = alert.Notification{Client: notificationv1.NewNotificationServiceClient(conn)}
	}
	for subscriber, addr := range cfg.EventConsumers {
		conn, err := h.Dial(addr)
		if err != nil {
			h.Close()
			return nil, err
		}
		r := &outbox.Relay{
			Pool:       h.Pool,
			Subscriber: subscriber,
			Deliver:    clients.ConsumerDeliverer{Client: lineagev1.NewLineageEventConsumerServiceClient(conn)}.Deliver,
			Signal:     signal,
			// A message parked as dead pages, as lifecycle's do; the relay
			// logs every failure, and make run counts dead letters.
			OnDead: outbox.DeadLetterAlert(Name, alerts, logger),
			Logger: logger,
		}
		h.Go(r.Run)
		svc.Relays[subscriber] = r
	}
	if h.Temporal != nil {
		keep := cfg.OutboxRetention
		if keep <= 0 {
			keep = config.DefaultOutboxRetention
		}
		if err := retention.Setup(ctx, h.Temporal, h.Worker, Name, outbox.RetentionPolicy(h.Pool, keep)); err != nil {
			h.Close()
			return nil, err
		}
	}
	// The backlog of every relay's subscriber, at zero too (PL-24).
	if err := outbox.ObserveBacklog(h.Pool, Name, slices.Sorted(maps.Keys(svc.Relays)), logger); err != nil {
		h.Close()
		return nil, err
	}
	return svc, nil
}
