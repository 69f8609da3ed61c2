// Package envcfg loads typed configuration from environment variables.
package envcfg

import (
	"context"
	"fmt"
	"reflect"
	"strings"

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
		return fmt.Errorf("load configuration from environment: %s: %w", variableOf(target, err), err)
	}
	return nil
}

// variableOf names the environment variable err is about: go-envconfig
// reports the Go field ("Retention: time: invalid duration"), which says
// nothing to the operator who set RUNNER_TRANSCRIPT_RETENTION.
func variableOf(target any, err error) string {
	msg := err.Error()
	name := "a variable"
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("env"), ",")
			switch {
			case key != "" && strings.HasPrefix(msg, prefix+f.Name+": "):
				name = strings.TrimSpace(key)
				return
			case key == "" && strings.HasPrefix(msg, prefix+f.Name+": "):
				walk(f.Type, prefix+f.Name+": ")
			}
		}
	}
	walk(reflect.TypeOf(target), "")
	return name
}
