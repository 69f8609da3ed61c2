// Command queue runs the queue service: the messages queued for sessions. It serves the
// zimmer.queue.v1 gRPC API and runs a Temporal worker on task queue
// zimmer-queue.
//
//	queue           serve until SIGINT or SIGTERM
//	queue migrate   apply the database migrations and exit
//
// Configuration comes from the environment (QUEUE_* and the shared
// variables; see internal/config). Logs are JSON on stdout.
package main

import (
	"context"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/queue/internal/config"
	"github.com/zimmerhq/zimmer/services/queue/internal/service"
)

var command = host.Command[config.Config]{
	Name:       service.Name,
	Load:       config.Load,
	Migrations: service.MigrationSets,
	New: func(ctx context.Context, cfg config.Config, logger *slog.Logger) (host.Service, error) {
		return service.New(ctx, cfg, logger)
	},
}

func main() { host.Main(command) }
