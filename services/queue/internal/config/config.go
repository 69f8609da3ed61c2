// Package config reads the queue service's configuration: QUEUE_GRPC_ADDR,
// QUEUE_DATABASE_URL, QUEUE_LOG_LEVEL and the shared TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE and ZIMMER_API_KEYS (see host.LoadConfig), plus
// QUEUE_LIFECYCLE_ADDR.
package config

import (
	"context"

	"github.com/zimmerhq/zimmer/services/platform/envcfg"
	"github.com/zimmerhq/zimmer/services/platform/host"
)

// Port is the queue service's default gRPC port on 127.0.0.1.
const Port = 9103

// Config is the queue service's configuration.
type Config struct {
	host.Config
	// LifecycleAddr is QUEUE_LIFECYCLE_ADDR: the lifecycle service that
	// resolves the sessions named and says whether they take messages
	// (default 127.0.0.1:9101).
	LifecycleAddr string
}

// Load reads and validates the configuration from getenv.
func Load(ctx context.Context, getenv func(string) string) (Config, error) {
	base, err := host.LoadConfig(ctx, getenv, "queue", Port)
	if err != nil {
		return Config{}, err
	}
	var env struct {
		LifecycleAddr string `env:"QUEUE_LIFECYCLE_ADDR, default=127.0.0.1:9101"`
	}
	if err := envcfg.Load(ctx, getenv, &env); err != nil {
		return Config{}, err
	}
	return Config{Config: base, LifecycleAddr: env.LifecycleAddr}, nil
}
