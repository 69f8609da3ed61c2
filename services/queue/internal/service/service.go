// Package service is the queue's composition root, the only package that
// knows every adapter; main and the component tests build the service here.
package service

import (
	"context"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/queue/internal/app"
	"github.com/zimmerhq/zimmer/services/queue/internal/clients"
	"github.com/zimmerhq/zimmer/services/queue/internal/config"
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
// Temporal worker when cfg names a server, dials lifecycle (lazily: it
// need not be up yet) and registers the queue API. Run starts it; Close
// releases it.
func New(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Service, error) {
	h, err := host.New(ctx, Name, cfg.Config, logger, MigrationSets...)
	if err != nil {
		return nil, err
	}
	lifecycle, err := h.Dial(cfg.LifecycleAddr)
	if err != nil {
		h.Close()
		return nil, err
	}
	queue := app.New(clients.NewLifecycle(lifecycle), store.NewMessages(h.Pool, clock.System{}))
	grpcapi.NewServer(queue, logger).Register(h.GRPC.Server)
	return &Service{Host: h}, nil
}
