// Package config reads lineage's configuration from LINEAGE_* (and the
// shared TEMPORAL_*, ZIMMER_API_KEYS, ZIMMER_ADMIN_USER) environment
// variables.
package config

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/envcfg"
	"github.com/zimmerhq/zimmer/services/platform/host"
)

const (
	// Service names the service in env prefixes, logs and its task queue.
	Service = "lineage"
	// DefaultPort is lineage's gRPC port in the local stack.
	DefaultPort = 9102
	// DefaultOutboxRetention is LINEAGE_OUTBOX_RETENTION's default.
	DefaultOutboxRetention = 24 * time.Hour
)

// Config is the host's configuration and lineage's own.
type Config struct {
	host.Config
	// AdminUser is ZIMMER_ADMIN_USER: the roster key of the one human
	// responsible for anything typed into the web UI. A key naming no row
	// attributes nothing.
	AdminUser string
	// EventConsumers is LINEAGE_EVENT_CONSUMERS: "subscriber=host:port,…"
	// for each context that consumes lineage's events through
	// LineageEventConsumerService. The default lists lifecycle, which writes
	// uncle-edge outcomes on the sessions' timelines, at its default
	// address. A subscriber not listed keeps its events in the outbox until
	// it is.
	EventConsumers map[string]string
	// OutboxRetention is LINEAGE_OUTBOX_RETENTION: how long a delivered
	// event stays in the outbox before the retention schedule deletes it.
	OutboxRetention time.Duration
	// NotificationAddr is LINEAGE_NOTIFICATION_ADDR: where alerts about
	// events no consumer will take are raised; empty logs them instead.
	NotificationAddr string
}

// Load parses and validates the configuration once, in run.
func Load(ctx context.Context, getenv func(string) string) (Config, error) {
	hc, err := host.LoadConfig(ctx, getenv, Service, DefaultPort)
	if err != nil {
		return Config{}, err
	}
	var env struct {
		AdminUser        string        `env:"ZIMMER_ADMIN_USER, default=tadasant"`
		OutboxRetention  time.Duration `env:"LINEAGE_OUTBOX_RETENTION, default=24h"`
		NotificationAddr string        `env:"LINEAGE_NOTIFICATION_ADDR, default=127.0.0.1:9105"`
	}
	if err := envcfg.Load(ctx, getenv, &env); err != nil {
		return Config{}, err
	}
	// Loaded apart so that a malformed list is reported by its name.
	var consumers struct {
		M map[string]string `env:"LINEAGE_EVENT_CONSUMERS, separator==, default=lifecycle=127.0.0.1:9101"`
	}
	if err := envcfg.Load(ctx, getenv, &consumers); err != nil {
		return Config{}, fmt.Errorf("LINEAGE_EVENT_CONSUMERS is not subscriber=host:port,…: %w", err)
	}
	c := Config{
		Config:           hc,
		AdminUser:        strings.TrimSpace(env.AdminUser),
		EventConsumers:   consumers.M,
		OutboxRetention:  env.OutboxRetention,
		NotificationAddr: env.NotificationAddr,
	}
	if err := domain.ValidateUserKey(c.AdminUser); err != nil {
		return Config{}, fmt.Errorf("ZIMMER_ADMIN_USER %q: %w", c.AdminUser, err)
	}
	for subscriber, addr := range c.EventConsumers {
		if subscriber == "" || addr == "" {
			return Config{}, fmt.Errorf("LINEAGE_EVENT_CONSUMERS: %q=%q is not subscriber=host:port", subscriber, addr)
		}
	}
	if c.OutboxRetention <= 0 {
		return Config{}, fmt.Errorf("LINEAGE_OUTBOX_RETENTION must be positive, got %s", c.OutboxRetention)
	}
	return c, nil
}

// LogValue adds the admin to the host's redacted view.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.Any("host", c.Config), slog.String("admin_user", c.AdminUser),
		slog.Any("event_consumers", c.EventConsumers), slog.Duration("outbox_retention", c.OutboxRetention),
		slog.String("notification_addr", c.NotificationAddr))
}
