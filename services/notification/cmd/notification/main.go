// Command notification runs the notification service: notifications and operational alerts. It serves the
// zimmer.notification.v1 gRPC API and runs a Temporal worker on task queue
// zimmer-notification.
//
//	notification           serve until SIGINT or SIGTERM
//	notification migrate   apply the database migrations and exit
//
// Configuration comes from the environment (NOTIFICATION_* and the shared
// variables; see internal/config). Logs are JSON on stdout.
package main

import (
	"context"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/notification/internal/config"
	"github.com/zimmerhq/zimmer/services/notification/internal/service"
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
