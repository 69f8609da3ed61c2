// Package config reads lineage's configuration from LINEAGE_* (and the
// shared TEMPORAL_*, ZIMMER_API_KEYS, ZIMMER_ADMIN_USER) environment
// variables.
package config

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/envcfg"
	"github.com/zimmerhq/zimmer/services/platform/host"
)

const (
	// Service names the service in env prefixes, logs and its task queue.
	Service = "lineage"
	// DefaultPort is lineage's gRPC port in the local stack.
	DefaultPort = 9102
)

// Config is the host's configuration and lineage's own.
type Config struct {
	host.Config
	// AdminUser is ZIMMER_ADMIN_USER: the roster key of the one human
	// responsible for anything typed into the web UI. A key naming no row
	// attributes nothing.
	AdminUser string
}

// Load parses and validates the configuration once, in run.
func Load(ctx context.Context, getenv func(string) string) (Config, error) {
	hc, err := host.LoadConfig(ctx, getenv, Service, DefaultPort)
	if err != nil {
		return Config{}, err
	}
	var env struct {
		AdminUser string `env:"ZIMMER_ADMIN_USER, default=tadasant"`
	}
	if err := envcfg.Load(ctx, getenv, &env); err != nil {
		return Config{}, err
	}
	c := Config{Config: hc, AdminUser: strings.TrimSpace(env.AdminUser)}
	if err := domain.ValidateUserKey(c.AdminUser); err != nil {
		return Config{}, fmt.Errorf("ZIMMER_ADMIN_USER %q: %w", c.AdminUser, err)
	}
	return c, nil
}

// LogValue adds the admin to the host's redacted view.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.Any("host", c.Config), slog.String("admin_user", c.AdminUser))
}
