// Package config reads the lifecycle service's configuration.
package config

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
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
	// EffectConsumers is LIFECYCLE_EFFECT_CONSUMERS: "owner=host:port,…" for
	// each context that consumes its effects (notification, queue, runner,
	// triggers). An owner not listed keeps its effects in the outbox until
	// it is.
	EffectConsumers map[string]string
	// NotificationAddr is LIFECYCLE_NOTIFICATION_ADDR: where alerts about
	// failing effects are raised. Empty: they are logged at error level.
	NotificationAddr string
	// AlertAfterAttempts is LIFECYCLE_ALERT_AFTER_ATTEMPTS: failed deliveries
	// of an alerting effect before it pages.
	AlertAfterAttempts int
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
		EffectConsumers   string        `env:"LIFECYCLE_EFFECT_CONSUMERS"`
		NotificationAddr  string        `env:"LIFECYCLE_NOTIFICATION_ADDR, default=127.0.0.1:9105"`
		AlertAfter        int           `env:"LIFECYCLE_ALERT_AFTER_ATTEMPTS, default=3"`
	}
	if err := envcfg.Load(ctx, getenv, &env); err != nil {
		return Config{}, err
	}
	if env.TrashRetention <= 0 {
		return Config{}, fmt.Errorf("LIFECYCLE_TRASH_RETENTION must be positive, got %s", env.TrashRetention)
	}
	consumers, err := parseConsumers(env.EffectConsumers)
	if err != nil {
		return Config{}, err
	}
	if env.AlertAfter < 1 {
		return Config{}, fmt.Errorf("LIFECYCLE_ALERT_AFTER_ATTEMPTS must be 1 or more, got %d", env.AlertAfter)
	}
	return Config{
		Config:             base,
		LineageAddr:        env.LineageAddr,
		RelayPollInterval:  env.RelayPollInterval,
		TrashRetention:     env.TrashRetention,
		EffectConsumers:    consumers,
		NotificationAddr:   env.NotificationAddr,
		AlertAfterAttempts: env.AlertAfter,
	}, nil
}

func parseConsumers(csv string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(csv, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		owner, addr, ok := strings.Cut(pair, "=")
		if !ok || owner == "" || addr == "" {
			return nil, fmt.Errorf("LIFECYCLE_EFFECT_CONSUMERS: %q is not owner=host:port", pair)
		}
		out[strings.TrimSpace(owner)] = strings.TrimSpace(addr)
	}
	return out, nil
}

// LogValue keeps secrets out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("host", c.Config),
		slog.String("lineage_addr", c.LineageAddr),
		slog.Duration("relay_poll_interval", c.RelayPollInterval),
		slog.Duration("trash_retention", c.TrashRetention),
		slog.Any("effect_consumers", c.EffectConsumers),
		slog.String("notification_addr", c.NotificationAddr),
	)
}
