package config_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/config"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()

	cfg, err := config.Load(context.Background(), env(nil))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", cfg.HTTPAddr)
	require.Equal(t, "info", cfg.LogLevel)
	require.Equal(t, []config.Service{
		{Name: "lifecycle", Addr: "127.0.0.1:9101"},
		{Name: "lineage", Addr: "127.0.0.1:9102"},
		{Name: "queue", Addr: "127.0.0.1:9103"},
		{Name: "runner", Addr: "127.0.0.1:9104"},
		{Name: "notification", Addr: "127.0.0.1:9105"},
	}, cfg.Services())
	require.Empty(t, cfg.APIKeys)
	require.Empty(t, cfg.AdminAPIKeys)
	require.Empty(t, cfg.InternalToken)
	require.Equal(t, time.Hour, cfg.MCPSessionTTL)
	require.Equal(t, 1000, cfg.MCPMaxSessions)
}

func TestLoadMCPSessionLimits(t *testing.T) {
	t.Parallel()

	cfg, err := config.Load(context.Background(), env(map[string]string{
		"GATEWAY_MCP_SESSION_TTL": "15m", "GATEWAY_MCP_MAX_SESSIONS": "50",
	}))
	require.NoError(t, err)
	require.Equal(t, 15*time.Minute, cfg.MCPSessionTTL)
	require.Equal(t, 50, cfg.MCPMaxSessions)

	_, err = config.Load(context.Background(), env(map[string]string{"GATEWAY_MCP_SESSION_TTL": "10ms"}))
	require.ErrorContains(t, err, "GATEWAY_MCP_SESSION_TTL")
	_, err = config.Load(context.Background(), env(map[string]string{"GATEWAY_MCP_MAX_SESSIONS": "-1"}))
	require.ErrorContains(t, err, "GATEWAY_MCP_MAX_SESSIONS")
}

func TestLoadOverrides(t *testing.T) {
	t.Parallel()

	cfg, err := config.Load(context.Background(), env(map[string]string{
		"GATEWAY_HTTP_ADDR":      "0.0.0.0:9000",
		"GATEWAY_LOG_LEVEL":      "debug",
		"GATEWAY_LIFECYCLE_ADDR": "lifecycle:1",
		"GATEWAY_QUEUE_ADDR":     "queue:3",
		"ZIMMER_API_KEYS":        " , first-key ,second-key",
		"ZIMMER_ADMIN_API_KEYS":  "admin-key",
		"ZIMMER_INTERNAL_TOKEN":  "internal-token-value",
	}))
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0:9000", cfg.HTTPAddr)
	require.Equal(t, "debug", cfg.LogLevel)
	require.Equal(t, "lifecycle:1", cfg.LifecycleAddr)
	require.Equal(t, "queue:3", cfg.QueueAddr)
	require.Equal(t, "127.0.0.1:9102", cfg.LineageAddr)
	require.Equal(t, " , first-key ,second-key", cfg.APIKeys)
	require.Equal(t, "admin-key", cfg.AdminAPIKeys)
	require.Equal(t, "internal-token-value", cfg.InternalToken)

	logged := fmt.Sprint(slog.AnyValue(cfg).Resolve())
	for _, secret := range []string{"first-key", "admin-key", "internal-token-value"} {
		require.NotContains(t, logged, secret, "keys and the token are redacted")
	}
	require.Contains(t, logged, "api_keys_set=true")
	require.Contains(t, logged, "admin_api_keys_set=true")
	require.Contains(t, logged, "internal_token_set=true")
}

func TestLoadRejectsBadAddresses(t *testing.T) {
	t.Parallel()

	_, err := config.Load(context.Background(), env(map[string]string{"GATEWAY_HTTP_ADDR": "8080"}))
	require.ErrorContains(t, err, "GATEWAY_HTTP_ADDR")
	_, err = config.Load(context.Background(), env(map[string]string{"GATEWAY_RUNNER_ADDR": "runner"}))
	require.ErrorContains(t, err, "GATEWAY_RUNNER_ADDR")
}

func TestLoadSupervisorCredentials(t *testing.T) {
	t.Parallel()

	cfg, err := config.Load(context.Background(), env(map[string]string{
		"ZIMMER_SUPERVISOR_USER": "operator", "ZIMMER_SUPERVISOR_PASSWORD": "s3cret-pass",
	}))
	require.NoError(t, err)
	require.Equal(t, "operator", cfg.SupervisorUser)
	require.Equal(t, "s3cret-pass", cfg.SupervisorPassword)
	logged := fmt.Sprint(slog.AnyValue(cfg).Resolve())
	require.NotContains(t, logged, "s3cret-pass", "the password is redacted")
	require.Contains(t, logged, "supervisor_enabled=true")

	_, err = config.Load(context.Background(), env(map[string]string{"ZIMMER_SUPERVISOR_USER": "operator"}))
	require.ErrorContains(t, err, "set both")
}

func TestLoadConsole(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(context.Background(), env(nil))
	require.NoError(t, err)
	require.Equal(t, "tadasant", cfg.AdminUser, "lineage's default: the console signs in the human lineage attributes to")
	require.Empty(t, cfg.ConsolePasswordHash, "the console is off until a password is set")

	hash := "$2a$04$0123456789012345678901uQHzO5bD8pEIj0oS9r6i2q0y3MZ0qW6" // bcrypt shape, cost 4
	cfg, err = config.Load(context.Background(), env(map[string]string{"ZIMMER_CONSOLE_PASSWORD_HASH": hash, "ZIMMER_ADMIN_USER": "julie"}))
	require.NoError(t, err)
	require.Equal(t, hash, cfg.ConsolePasswordHash)
	require.Equal(t, "julie", cfg.AdminUser)
	require.NotContains(t, fmt.Sprint(slog.AnyValue(cfg).Resolve()), hash, "the hash stays out of logs")

	_, err = config.Load(context.Background(), env(map[string]string{"ZIMMER_CONSOLE_PASSWORD_HASH": "plain password"}))
	require.ErrorContains(t, err, "ZIMMER_CONSOLE_PASSWORD_HASH")
}

func TestLoadDebugAddr(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(context.Background(), env(map[string]string{}))
	require.NoError(t, err)
	require.Empty(t, cfg.DebugAddr, "off unless set")
	cfg, err = config.Load(context.Background(), env(map[string]string{"GATEWAY_DEBUG_ADDR": ":6060"}))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:6060", cfg.DebugAddr)
	_, err = config.Load(context.Background(), env(map[string]string{"GATEWAY_DEBUG_ADDR": "0.0.0.0:6060"}))
	require.ErrorContains(t, err, "GATEWAY_DEBUG_ADDR")
}
