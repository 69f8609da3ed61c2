// Command runner runs the runner service: working directories and agent processes. It serves the
// zimmer.runner.v1 gRPC API and runs a Temporal worker on task queue
// zimmer-runner.
//
//	runner           serve until SIGINT or SIGTERM
//	runner migrate   apply the database migrations and exit
//
// Configuration comes from the environment (RUNNER_* and the shared
// variables; see internal/config). Logs are JSON on stdout.
package main

import (
	"context"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/service"
)

var command = host.Command[config.Config]{
	Name:       service.Name,
	Load:       config.Load,
	Migrations: service.MigrationSets,
	New: func(ctx context.Context, cfg config.Config, logger *slog.Logger) (host.Service, error) {
		return service.NewNode(ctx, cfg, logger)
	},
}

func main() { host.Main(command) }
