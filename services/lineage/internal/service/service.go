// Package service is lineage's composition root: the only package that
// knows every adapter.
package service

import (
	"context"
	"log/slog"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/config"
	"github.com/zimmerhq/zimmer/services/lineage/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/lineage/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// Name is the service's name: its task queue, log field and database suffix.
const Name = config.Service

// MigrationSets is the lineage database's schema, in order: the inbox that
// makes lifecycle's events idempotent, the outbox for the events lineage
// will publish, and its own tables.
var MigrationSets = []pgdb.MigrationSet{inbox.Migrations, outbox.Migrations, store.Migrations}

// Service is a runnable lineage: the host (Run, Close, Addr; a Temporal
// worker when configured, with nothing of lineage's registered yet) with
// the lineage API on its gRPC server.
type Service struct {
	*host.Host
}

// New is NewWithAdmin with the default admin (ZIMMER_ADMIN_USER unset).
func New(ctx context.Context, cfg host.Config, logger *slog.Logger) (*Service, error) {
	return NewWithAdmin(ctx, cfg, logger, "")
}

// NewWithAdmin migrates the database, opens the pool and registers the gRPC
// APIs; adminUser is ZIMMER_ADMIN_USER, the roster key web-UI messages are
// attributed to.
func NewWithAdmin(ctx context.Context, cfg host.Config, logger *slog.Logger, adminUser string) (*Service, error) {
	h, err := host.New(ctx, Name, cfg, logger, MigrationSets...)
	if err != nil {
		return nil, err
	}
	repo := store.New(h.Pool)
	lineagev1.RegisterLineageServiceServer(h.GRPC, grpcapi.New(logger,
		app.NewGetSessionNode(repo),
		app.NewGetHierarchy(repo),
		app.NewRecordUncleEdge(repo),
	))
	// Lifecycle's events arrive through the contract every subscriber
	// implements.
	lifecyclev1.RegisterSessionEventConsumerServiceServer(h.GRPC, grpcapi.NewConsumer(logger, app.NewApplySessionEvent(repo)))
	registerProvenance(h.GRPC.Server, h.Pool, logger, app.NewGetHierarchy(repo), adminUser)
	return &Service{Host: h}, nil
}
