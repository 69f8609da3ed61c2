package host

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// Configured is a service configuration: host.Config itself, or a struct
// embedding it.
type Configured interface{ HostConfig() Config }

// HostConfig implements Configured.
func (c Config) HostConfig() Config { return c }

// Service is what a service's composition root builds.
type Service interface {
	Run(ctx context.Context) error
	Close()
}

// Command is one service binary:
//
//	<name>           serve until SIGINT or SIGTERM
//	<name> migrate   apply the database migrations and exit
type Command[C Configured] struct {
	Name       string
	Load       func(ctx context.Context, getenv func(string) string) (C, error)
	Migrations []pgdb.MigrationSet
	New        func(ctx context.Context, cfg C, logger *slog.Logger) (Service, error)
}

// Main runs the command as the process and exits non-zero on error.
func Main[C Configured](c Command[C]) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := c.Run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
		os.Exit(1)
	}
}

// Run is main with its dependencies passed in, so tests drive the real
// start-up path.
func (c Command[C]) Run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	migrateOnly := len(args) == 1 && args[0] == "migrate"
	if len(args) > 0 && !migrateOnly {
		return fmt.Errorf("unknown arguments %q; usage: %s [migrate]", args, c.Name)
	}
	cfg, err := c.Load(ctx, getenv)
	if err != nil {
		return err
	}
	base := cfg.HostConfig()
	logger, err := slogx.New(stdout, c.Name, base.LogLevel)
	if err != nil {
		return err
	}
	if migrateOnly {
		if err := pgdb.Migrate(ctx, base.DatabaseURL, c.Migrations...); err != nil {
			return err
		}
		logger.Info("database migrated", "config", base)
		return nil
	}
	svc, err := c.New(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer svc.Close()
	return svc.Run(ctx)
}
