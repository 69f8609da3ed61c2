package host_test

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// Every service reads the keys and the internal token unprefixed, as the
// gateway does, and never logs them.
func TestLoadConfigReadsTheCredentialsAndKeepsThemOutOfLogs(t *testing.T) {
	t.Parallel()
	cfg, err := host.LoadConfig(t.Context(), servicetest.Getenv(map[string]string{
		"ZIMMER_API_KEYS":       "operator-key-1",
		"ZIMMER_ADMIN_API_KEYS": "admin-key-1",
		"ZIMMER_INTERNAL_TOKEN": "internal-token-1",
		"DEMO_INTERNAL_TOKEN":   "not this one",
	}), "demo", 9999)
	require.NoError(t, err)
	require.Equal(t, "operator-key-1", cfg.APIKeys)
	require.Equal(t, "admin-key-1", cfg.AdminAPIKeys)
	require.Equal(t, "internal-token-1", cfg.InternalToken)

	auth := cfg.Auth()
	require.True(t, auth.Operators.Valid("operator-key-1"))
	require.True(t, auth.Admins.Valid("admin-key-1"))
	require.False(t, auth.Admins.Valid("operator-key-1"))
	require.Equal(t, "internal-token-1", auth.InternalToken)

	logged := fmt.Sprint(slog.AnyValue(cfg).Resolve())
	for _, secret := range []string{"operator-key-1", "admin-key-1", "internal-token-1"} {
		require.NotContains(t, logged, secret)
	}
	require.Contains(t, logged, "admin_api_keys_set=true")
	require.Contains(t, logged, "internal_token_set=true")
}

// <SERVICE>_DEBUG_ADDR is the service's own (prefixed), off when unset,
// loopback when its host is left out, and refused on any other host.
func TestLoadConfigReadsTheDebugAddress(t *testing.T) {
	t.Parallel()
	cfg, err := host.LoadConfig(t.Context(), servicetest.Getenv(map[string]string{}), "demo", 9999)
	require.NoError(t, err)
	require.Empty(t, cfg.DebugAddr)

	cfg, err = host.LoadConfig(t.Context(), servicetest.Getenv(map[string]string{"DEMO_DEBUG_ADDR": ":6060", "DEBUG_ADDR": "no"}), "demo", 9999)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:6060", cfg.DebugAddr)

	_, err = host.LoadConfig(t.Context(), servicetest.Getenv(map[string]string{"DEMO_DEBUG_ADDR": "0.0.0.0:6060"}), "demo", 9999)
	require.ErrorContains(t, err, "DEMO_DEBUG_ADDR")
	require.ErrorContains(t, err, "loopback")
}
