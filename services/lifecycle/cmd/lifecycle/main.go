// Command lifecycle runs the lifecycle service: sessions and their state machine. It serves the
// zimmer.lifecycle.v1 gRPC API and runs a Temporal worker on task queue
// zimmer-lifecycle.
//
//	lifecycle           serve until SIGINT or SIGTERM
//	lifecycle migrate   apply the database migrations and exit
//
// Configuration comes from the environment (LIFECYCLE_* and the shared
// variables; see internal/config). Logs are JSON on stdout.
package main

import (
	"context"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/host"
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
