// Package config reads the runner service's configuration:
// RUNNER_GRPC_ADDR, RUNNER_DATABASE_URL, RUNNER_LOG_LEVEL and the shared
// TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and ZIMMER_API_KEYS (see
// host.LoadConfig).
package config

import (
	"context"

	"github.com/zimmerhq/zimmer/services/platform/host"
)

// Port is the runner service's default gRPC port on 127.0.0.1.
const Port = 9104

// Load reads and validates the configuration from getenv.
func Load(ctx context.Context, getenv func(string) string) (host.Config, error) {
	return host.LoadConfig(ctx, getenv, "runner", Port)
}
