// Package config reads the notification service's configuration:
// NOTIFICATION_GRPC_ADDR, NOTIFICATION_DATABASE_URL, NOTIFICATION_LOG_LEVEL,
// NOTIFICATION_ALERT_DEDUP_WINDOW, the sinks' variables (see sink.Config)
// and the shared TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE and ZIMMER_API_KEYS (see host.LoadConfig).
package config

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/platform/envcfg"
	"github.com/zimmerhq/zimmer/services/platform/host"
)

// Port is the notification service's default gRPC port on 127.0.0.1.
const Port = 9105

// Config is the notification service's configuration.
type Config struct {
	host.Config
	// AlertDedupWindow is NOTIFICATION_ALERT_DEDUP_WINDOW: how long an
	// opened alert absorbs repeats of its dedup key instead of paging again.
	AlertDedupWindow time.Duration
	// Sinks are where pushes and pages go (NOTIFICATION_SINKS,
	// ZIMMER_ALERT_SINKS and each sink's settings).
	Sinks sink.Config
}

// Load reads and validates the configuration from getenv.
func Load(ctx context.Context, getenv func(string) string) (Config, error) {
	base, err := host.LoadConfig(ctx, getenv, "notification", Port)
	if err != nil {
		return Config{}, err
	}
	var env struct {
		AlertDedupWindow time.Duration `env:"NOTIFICATION_ALERT_DEDUP_WINDOW, default=15m"`
	}
	if err := envcfg.Load(ctx, getenv, &env); err != nil {
		return Config{}, err
	}
	if env.AlertDedupWindow <= 0 {
		return Config{}, fmt.Errorf("NOTIFICATION_ALERT_DEDUP_WINDOW must be positive, got %s", env.AlertDedupWindow)
	}
	sinks, err := sink.LoadConfig(ctx, getenv)
	if err != nil {
		return Config{}, err
	}
	return Config{Config: base, AlertDedupWindow: env.AlertDedupWindow, Sinks: sinks}, nil
}

// LogValue keeps secrets out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("host", c.Config),
		slog.Duration("alert_dedup_window", c.AlertDedupWindow),
		slog.Any("sinks", c.Sinks),
	)
}
