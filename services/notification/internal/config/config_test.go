package config_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/config"
)

func TestLoadAlertDedupWindow(t *testing.T) {
	t.Parallel()
	load := func(window string) (config.Config, error) {
		return config.Load(context.Background(), func(k string) string {
			if k == "NOTIFICATION_ALERT_DEDUP_WINDOW" {
				return window
			}
			return ""
		})
	}
	cfg, err := load("")
	require.NoError(t, err)
	require.Equal(t, 15*time.Minute, cfg.AlertDedupWindow, "the default")
	require.Equal(t, "127.0.0.1:9105", cfg.GRPCAddr)
	require.Equal(t, []string{"log"}, cfg.Sinks.AlertRoute, "pages go to the log sink by default")

	cfg, err = load("90s")
	require.NoError(t, err)
	require.Equal(t, 90*time.Second, cfg.AlertDedupWindow)

	for _, bad := range []string{"0s", "-1m", "soon"} {
		_, err := load(bad)
		require.Error(t, err, "window %q", bad)
	}
}

func TestLoadLifecycleAndDebounce(t *testing.T) {
	t.Parallel()
	load := func(vars map[string]string) (config.Config, error) {
		return config.Load(context.Background(), func(k string) string { return vars[k] })
	}
	cfg, err := load(nil)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9101", cfg.LifecycleAddr, "make run's lifecycle")
	require.Equal(t, time.Minute, cfg.NeedsInputDebounce, "the spec's NEEDS_INPUT_DEBOUNCE")
	require.Equal(t, []string{"log"}, cfg.Sinks.PushRoute, "pushes go to the log sink by default")

	cfg, err = load(map[string]string{"NOTIFICATION_LIFECYCLE_ADDR": "10.0.0.5:7001", "NOTIFICATION_NEEDS_INPUT_DEBOUNCE": "2s"})
	require.NoError(t, err)
	require.Equal(t, "10.0.0.5:7001", cfg.LifecycleAddr)
	require.Equal(t, 2*time.Second, cfg.NeedsInputDebounce)

	for _, bad := range []map[string]string{
		{"NOTIFICATION_NEEDS_INPUT_DEBOUNCE": "0s"},
		{"NOTIFICATION_NEEDS_INPUT_DEBOUNCE": "-1m"},
		{"NOTIFICATION_NEEDS_INPUT_DEBOUNCE": "soon"},
		{"NOTIFICATION_LIFECYCLE_ADDR": "lifecycle"},
	} {
		_, err := load(bad)
		require.Error(t, err, "%v", bad)
	}
}
