// Command lineage runs the lineage service: the session graph (spawn and
// uncle edges) and the provenance of human messages.
//
//	lineage           serve gRPC and run the Temporal worker
//	lineage migrate   apply the database migrations and exit
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/zimmerhq/zimmer/services/lineage/internal/config"
	"github.com/zimmerhq/zimmer/services/lineage/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lineage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	migrateOnly := len(args) == 1 && args[0] == "migrate"
	if len(args) > 0 && !migrateOnly {
		return fmt.Errorf("unknown arguments %q: want none (serve) or migrate", args)
	}
	cfg, err := config.Load(ctx, getenv)
	if err != nil {
		return err
	}
	logger, err := slogx.New(stdout, config.Service, cfg.LogLevel)
	if err != nil {
		return err
	}
	if migrateOnly {
		if err := pgdb.Migrate(ctx, cfg.DatabaseURL, service.MigrationSets...); err != nil {
			return err
		}
		logger.Info("migrations applied")
		return nil
	}

	svc, err := service.New(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer svc.Close()
	return svc.Run(ctx)
}
