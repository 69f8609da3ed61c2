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
