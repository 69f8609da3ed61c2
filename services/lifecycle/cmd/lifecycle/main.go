// Command lifecycle runs the lifecycle service: sessions and their state
// machine.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle:", err)
		os.Exit(1)
	}
}

// run is main with its dependencies passed in. "lifecycle migrate" applies
// the migrations and exits; "lifecycle" (no argument) runs the service.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := config.Load(ctx, getenv)
	if err != nil {
		return err
	}
	logger, err := slogx.New(stdout, service.Name, cfg.LogLevel)
	if err != nil {
		return err
	}
	switch {
	case len(args) == 0:
	case args[0] == "migrate":
		return pgdb.Migrate(ctx, cfg.DatabaseURL, service.MigrationSets...)
	default:
		return fmt.Errorf("unknown command %q; usage: lifecycle [migrate]", args[0])
	}
	svc, err := service.New(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer svc.Close()
	return svc.Run(ctx)
}
