// Package config reads lineage's configuration from LINEAGE_* (and the
// shared TEMPORAL_*, ZIMMER_API_KEYS) environment variables.
package config

import (
	"context"

	"github.com/zimmerhq/zimmer/services/platform/host"
)

const (
	// Service names the service in env prefixes, logs and its task queue.
	Service = "lineage"
	// DefaultPort is lineage's gRPC port in the local stack.
	DefaultPort = 9102
)

// Load parses and validates the configuration once, in run.
func Load(ctx context.Context, getenv func(string) string) (host.Config, error) {
	return host.LoadConfig(ctx, getenv, Service, DefaultPort)
}
