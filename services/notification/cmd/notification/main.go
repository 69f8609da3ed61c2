// Command notification runs the notification service: the
// zimmer.notification.v1.NotificationService gRPC server and the Temporal worker on task
// queue zimmer-notification.
//
//	notification           serve until SIGINT or SIGTERM
//	notification migrate   apply the database migrations and exit
//
// Configuration comes from the environment (see internal/config); logs are
// JSON on stdout.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/zimmerhq/zimmer/services/notification/internal/config"
	"github.com/zimmerhq/zimmer/services/notification/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "notification:", err)
		os.Exit(1)
	}
}

// run is main with its dependencies passed in.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	migrateOnly := len(args) == 1 && args[0] == "migrate"
	if len(args) > 0 && !migrateOnly {
		return fmt.Errorf("unknown arguments %q; usage: notification [migrate]", args)
	}
	cfg, err := config.Load(ctx, getenv)
	if err != nil {
		return err
	}
	logger, err := slogx.New(stdout, service.Name, cfg.LogLevel)
	if err != nil {
		return err
	}
	if migrateOnly {
		if err := pgdb.Migrate(ctx, cfg.DatabaseURL, service.MigrationSets...); err != nil {
			return err
		}
		logger.Info("database migrated", "config", cfg)
		return nil
	}
	svc, err := service.New(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer svc.Close()
	return svc.Run(ctx)
}
