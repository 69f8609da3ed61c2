package config_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
)

func load(t *testing.T, env map[string]string) (config.Config, error) {
	t.Helper()
	return config.Load(context.Background(), func(k string) string { return env[k] })
}

func TestDefaultsDeliverToLineageAndKeepADayOfDeliveries(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"lineage": "127.0.0.1:9102"}, cfg.EffectConsumers,
		"lineage is one more consumer, listed by default")
	require.Equal(t, 24*time.Hour, cfg.OutboxRetention)
	require.Equal(t, 20, cfg.DeadAfterAttempts)
	require.Equal(t, 3, cfg.AlertAfterAttempts)
	require.Equal(t, 1, cfg.TurnRelayConcurrency, "one session at a time unless the deployment says so")
}

func TestConsumersAreOneList(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, map[string]string{
		"LIFECYCLE_EFFECT_CONSUMERS":       " lineage=10.0.0.2:9102, queue=10.0.0.3:9103 ",
		"LIFECYCLE_OUTBOX_RETENTION":       "2h",
		"LIFECYCLE_DEAD_AFTER_ATTEMPTS":    "5",
		"LIFECYCLE_ALERT_AFTER_ATTEMPTS":   "2",
		"LIFECYCLE_TURN_RELAY_CONCURRENCY": "16",
	})
	require.NoError(t, err)
	require.Equal(t, 16, cfg.TurnRelayConcurrency)
	require.Equal(t, map[string]string{"lineage": "10.0.0.2:9102", "queue": "10.0.0.3:9103"}, cfg.EffectConsumers)
	require.Equal(t, 2*time.Hour, cfg.OutboxRetention)
	require.Equal(t, 5, cfg.DeadAfterAttempts)
}

func TestBadValuesFailFast(t *testing.T) {
	t.Parallel()
	for name, env := range map[string]map[string]string{
		"consumer without address": {"LIFECYCLE_EFFECT_CONSUMERS": "lineage"},
		"zero retention":           {"LIFECYCLE_OUTBOX_RETENTION": "0s"},
		"negative retention":       {"LIFECYCLE_OUTBOX_RETENTION": "-1h"},
		"never dead":               {"LIFECYCLE_DEAD_AFTER_ATTEMPTS": "-1"},
		"no turn relay":            {"LIFECYCLE_TURN_RELAY_CONCURRENCY": "0"},
		"no runner timeout":        {"LIFECYCLE_RUNNER_TIMEOUT": "0s"},
		"no queue timeout":         {"LIFECYCLE_QUEUE_TIMEOUT": "0s"},
		"no delivery retention":    {"LIFECYCLE_DELIVERY_RETENTION": "0s"},
	} {
		_, err := load(t, env)
		require.Error(t, err, name)
	}
}

func TestThePauseAsksTheRunnerAtItsDefaultAddress(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, nil)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9104", cfg.RunnerAddr)
	require.Equal(t, 20*time.Second, cfg.RunnerTimeout)
	cfg, err = load(t, map[string]string{"LIFECYCLE_RUNNER_ADDR": "10.0.0.4:9104", "LIFECYCLE_RUNNER_TIMEOUT": "30s"})
	require.NoError(t, err)
	require.Equal(t, "10.0.0.4:9104", cfg.RunnerAddr)
	require.Equal(t, 30*time.Second, cfg.RunnerTimeout)
	cfg, err = load(t, map[string]string{"LIFECYCLE_RUNNER_ADDR": "none"})
	require.NoError(t, err)
	require.Empty(t, cfg.RunnerAddr, "none: no runner is asked")
}

func TestTheArchiveAsksTheQueueAtItsDefaultAddressAndDeliveriesAreKeptAWeek(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, nil)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9103", cfg.QueueAddr)
	require.Equal(t, 10*time.Second, cfg.QueueTimeout)
	require.Equal(t, 7*24*time.Hour, cfg.DeliveryRetention)
	cfg, err = load(t, map[string]string{"LIFECYCLE_QUEUE_ADDR": "10.0.0.3:9103", "LIFECYCLE_QUEUE_TIMEOUT": "3s", "LIFECYCLE_DELIVERY_RETENTION": "48h"})
	require.NoError(t, err)
	require.Equal(t, "10.0.0.3:9103", cfg.QueueAddr)
	require.Equal(t, 3*time.Second, cfg.QueueTimeout)
	require.Equal(t, 48*time.Hour, cfg.DeliveryRetention)
	cfg, err = load(t, map[string]string{"LIFECYCLE_QUEUE_ADDR": "none"})
	require.NoError(t, err)
	require.Empty(t, cfg.QueueAddr, "none: archives consult no queue")
}

// The sweeps default to the spec (hourly, 7 days untouched) and refuse a
// window that would sweep everything or never run.
func TestSweepsDefaultToTheSpec(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, nil)
	require.NoError(t, err)
	require.Equal(t, time.Hour, cfg.StaleSweepInterval)
	require.Equal(t, 7*24*time.Hour, cfg.StaleAfter)
	require.Equal(t, 5*time.Minute, cfg.ElicitationSweepInterval)
	require.Equal(t, time.Hour, cfg.ElicitationExpiry)
	require.Equal(t, 30*time.Second, cfg.HeartbeatSweepInterval)
	cfg, err = load(t, map[string]string{"LIFECYCLE_STALE_SWEEP_INTERVAL": "10m", "LIFECYCLE_STALE_AFTER": "72h",
		"LIFECYCLE_ELICITATION_SWEEP_INTERVAL": "1m", "LIFECYCLE_ELICITATION_EXPIRY": "30m", "LIFECYCLE_HEARTBEAT_SWEEP_INTERVAL": "15s"})
	require.NoError(t, err)
	require.Equal(t, 10*time.Minute, cfg.StaleSweepInterval)
	require.Equal(t, 72*time.Hour, cfg.StaleAfter)
	require.Equal(t, time.Minute, cfg.ElicitationSweepInterval)
	require.Equal(t, 30*time.Minute, cfg.ElicitationExpiry)
	require.Equal(t, 15*time.Second, cfg.HeartbeatSweepInterval)
	for _, name := range []string{"LIFECYCLE_STALE_SWEEP_INTERVAL", "LIFECYCLE_STALE_AFTER",
		"LIFECYCLE_ELICITATION_SWEEP_INTERVAL", "LIFECYCLE_ELICITATION_EXPIRY", "LIFECYCLE_HEARTBEAT_SWEEP_INTERVAL"} {
		_, err = load(t, map[string]string{name: "0s"})
		require.ErrorContains(t, err, name+" must be positive")
	}
}

// GitHub: nothing watched by default; a token, or a whole App, not both;
// the token never in the logged configuration.
func TestGitHubIsATokenOrAnApp(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, nil)
	require.NoError(t, err)
	require.False(t, cfg.GitHub.Enabled(), "make run needs none of it")
	require.Equal(t, 30*time.Second, cfg.GitHub.PollInterval, "the spec's cadence")
	require.Equal(t, "https://api.github.com", cfg.GitHub.APIURL)

	cfg, err = load(t, map[string]string{"GITHUB_TOKEN": "ghp_secret", "GITHUB_POLL_INTERVAL": "5s"})
	require.NoError(t, err)
	require.True(t, cfg.GitHub.Enabled())
	require.Equal(t, 5*time.Second, cfg.GitHub.PollInterval)
	require.NotContains(t, fmt.Sprint(cfg.LogValue()), "ghp_secret")

	key := filepath.Join(t.TempDir(), "app.pem")
	require.NoError(t, os.WriteFile(key, []byte("-----BEGIN RSA PRIVATE KEY-----\n"), 0o600))
	cfg, err = load(t, map[string]string{"GITHUB_APP_ID": "1234", "GITHUB_APP_INSTALLATION_ID": "42", "GITHUB_APP_PRIVATE_KEY_FILE": key})
	require.NoError(t, err)
	require.True(t, cfg.GitHub.Enabled())
	require.Equal(t, int64(42), cfg.GitHub.App.InstallationID)

	for env, want := range map[string]map[string]string{
		"not both":                       {"GITHUB_TOKEN": "t", "GITHUB_APP_ID": "1"},
		"all three":                      {"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY_FILE": key},
		"read GITHUB_APP_PRIVATE_KEY":    {"GITHUB_APP_ID": "1", "GITHUB_APP_INSTALLATION_ID": "2", "GITHUB_APP_PRIVATE_KEY_FILE": key + ".missing"},
		"GITHUB_POLL_INTERVAL must be":   {"GITHUB_POLL_INTERVAL": "0s"},
		"GITHUB_API_URL must be an http": {"GITHUB_API_URL": "api.github.com"},
	} {
		_, err := load(t, want)
		require.ErrorContains(t, err, env)
	}
}

// LIFECYCLE_TURN_SLOTS: unset or empty is unlimited (every turn starts at
// once, as before slots), a whole number from 0 is the limit, anything
// else fails the start naming the variable.
func TestTurnSlotsAreUnlimitedUnlessSet(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, nil)
	require.NoError(t, err)
	require.Nil(t, cfg.TurnSlots)
	require.Equal(t, 30*time.Second, cfg.SpotSweepInterval)
	for in, want := range map[string]int{"0": 0, " 3 ": 3, "100000": 100000} {
		cfg, err := load(t, map[string]string{"LIFECYCLE_TURN_SLOTS": in})
		require.NoError(t, err, in)
		require.Equal(t, want, *cfg.TurnSlots, in)
	}
	for _, in := range []string{"-1", "three", "1.5", "100001"} {
		_, err := load(t, map[string]string{"LIFECYCLE_TURN_SLOTS": in})
		require.ErrorContains(t, err, "LIFECYCLE_TURN_SLOTS", in)
	}
}

func FuzzTurnSlots(f *testing.F) {
	for _, seed := range []string{"", "0", "3", "-1", "x", "99999999999999999999"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		cfg, err := config.Load(context.Background(), func(k string) string {
			if k == "LIFECYCLE_TURN_SLOTS" {
				return in
			}
			return ""
		})
		if err == nil && cfg.TurnSlots != nil {
			require.GreaterOrEqual(t, *cfg.TurnSlots, 0, "a limit read is never negative")
		}
	})
}
