// Command lineage runs the lineage service: the lineage graph and the provenance of human messages. It serves the
// zimmer.lineage.v1 gRPC API and runs a Temporal worker on task queue
// zimmer-lineage.
//
//	lineage           serve until SIGINT or SIGTERM
//	lineage migrate   apply the database migrations and exit
//
// Configuration comes from the environment (LINEAGE_* and the shared
// variables; see internal/config). Logs are JSON on stdout.
package main

import (
	"context"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/lineage/internal/config"
	"github.com/zimmerhq/zimmer/services/lineage/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/host"
)

var command = host.Command[config.Config]{
	Name:       service.Name,
	Load:       config.Load,
	Migrations: service.MigrationSets,
	New: func(ctx context.Context, cfg config.Config, logger *slog.Logger) (host.Service, error) {
		return service.NewFromConfig(ctx, cfg, logger)
	},
}

func main() { host.Main(command) }
