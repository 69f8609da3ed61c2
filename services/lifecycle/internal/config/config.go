// Package config reads the lifecycle service's configuration.
package config

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/envcfg"
	"github.com/zimmerhq/zimmer/services/platform/host"
)

// Port is the lifecycle service's default gRPC port.
const Port = 9101

// Config is the lifecycle service's configuration.
type Config struct {
	host.Config
	// LineageAddr is LIFECYCLE_LINEAGE_ADDR: where session events are
	// delivered. Empty disables delivery (events wait in the outbox).
	LineageAddr string
	// RelayPollInterval is LIFECYCLE_RELAY_POLL_INTERVAL: the longest an
	// event waits when a commit notification is missed.
	RelayPollInterval time.Duration
	// TrashRetention is LIFECYCLE_TRASH_RETENTION: how long an archived
	// session stays restorable (the spec's 4 days).
	TrashRetention time.Duration
}

// Load reads LIFECYCLE_* and the shared variables.
func Load(ctx context.Context, getenv func(string) string) (Config, error) {
	base, err := host.LoadConfig(ctx, getenv, "lifecycle", Port)
	if err != nil {
		return Config{}, err
	}
	var env struct {
		LineageAddr       string        `env:"LIFECYCLE_LINEAGE_ADDR, default=127.0.0.1:9102"`
		RelayPollInterval time.Duration `env:"LIFECYCLE_RELAY_POLL_INTERVAL, default=1s"`
		TrashRetention    time.Duration `env:"LIFECYCLE_TRASH_RETENTION, default=96h"`
	}
	if err := envcfg.Load(ctx, getenv, &env); err != nil {
		return Config{}, err
	}
	if env.TrashRetention <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_TRASH_RETENTION must be positive, got %s", env.TrashRetention)
	}
	return Config{Config: base, LineageAddr: env.LineageAddr, RelayPollInterval: env.RelayPollInterval, TrashRetention: env.TrashRetention}, nil
}

// LogValue keeps secrets out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("host", c.Config),
		slog.String("lineage_addr", c.LineageAddr),
		slog.Duration("relay_poll_interval", c.RelayPollInterval),
		slog.Duration("trash_retention", c.TrashRetention),
	)
}
