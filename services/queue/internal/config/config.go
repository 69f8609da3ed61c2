// Package config reads the queue service's configuration: QUEUE_GRPC_ADDR,
// QUEUE_DATABASE_URL, QUEUE_LOG_LEVEL and the shared TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE and ZIMMER_API_KEYS (see host.LoadConfig), plus
// QUEUE_LIFECYCLE_ADDR, QUEUE_RUNNER_ADDR, QUEUE_LINEAGE_ADDR and
// QUEUE_NOTIFICATION_ADDR and QUEUE_DRAIN_DELAY.
package config

import (
	"context"
	"fmt"
	"time"

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
	// RunnerAddr is QUEUE_RUNNER_ADDR: the runner whose InterruptTurn stops
	// a running turn for an interrupt (default 127.0.0.1:9104; "none": no
	// interrupts).
	RunnerAddr string
	// LineageAddr is QUEUE_LINEAGE_ADDR: lineage, which records the uncle
	// edge of a session that queues onto or interrupts another (default
	// 127.0.0.1:9102; "none" records none).
	LineageAddr string
	// NotificationAddr is QUEUE_NOTIFICATION_ADDR: the notification service
	// the queue's alerts (retired messages, an exhausted drain) are raised
	// through (default 127.0.0.1:9105; "none" logs them instead).
	NotificationAddr string
	// DrainDelay is QUEUE_DRAIN_DELAY: how long the after-pause drain waits
	// before its first attempt (the spec's 10 s, which lets a caller that
	// pauses and delivers at once go first; tests shorten it).
	DrainDelay time.Duration
}

// Load reads and validates the configuration from getenv.
func Load(ctx context.Context, getenv func(string) string) (Config, error) {
	base, err := host.LoadConfig(ctx, getenv, "queue", Port)
	if err != nil {
		return Config{}, err
	}
	var env struct {
		LifecycleAddr string        `env:"QUEUE_LIFECYCLE_ADDR, default=127.0.0.1:9101"`
		RunnerAddr    string        `env:"QUEUE_RUNNER_ADDR, default=127.0.0.1:9104"`
		LineageAddr   string        `env:"QUEUE_LINEAGE_ADDR, default=127.0.0.1:9102"`
		Notification  string        `env:"QUEUE_NOTIFICATION_ADDR, default=127.0.0.1:9105"`
		DrainDelay    time.Duration `env:"QUEUE_DRAIN_DELAY, default=10s"`
	}
	if err := envcfg.Load(ctx, getenv, &env); err != nil {
		return Config{}, err
	}
	if env.DrainDelay <= 0 {
		return Config{}, fmt.Errorf("QUEUE_DRAIN_DELAY must be a positive duration, like 10s; got %s", env.DrainDelay)
	}
	if env.RunnerAddr == "none" {
		env.RunnerAddr = ""
	}
	if env.LineageAddr == "none" {
		env.LineageAddr = ""
	}
	if env.Notification == "none" {
		env.Notification = ""
	}
	return Config{Config: base, LifecycleAddr: env.LifecycleAddr, RunnerAddr: env.RunnerAddr, LineageAddr: env.LineageAddr,
		NotificationAddr: env.Notification, DrainDelay: env.DrainDelay}, nil
}
