// Package envcfg loads typed configuration from environment variables.
package envcfg

import (
	"context"
	"fmt"

	"github.com/sethvargo/go-envconfig"
)

// Load fills target (a pointer to a struct with `env` tags) from getenv,
// applying the tags' defaults. getenv is injected so tests and main agree on
// one code path without touching the process environment.
func Load(ctx context.Context, getenv func(string) string, target any) error {
	err := envconfig.ProcessWith(ctx, &envconfig.Config{
		Target: target,
		Lookuper: envconfig.LookuperFunc(func(key string) (string, bool) {
			v := getenv(key)
			return v, v != ""
		}),
	})
	if err != nil {
		return fmt.Errorf("load configuration from environment: %w", err)
	}
	return nil
}
