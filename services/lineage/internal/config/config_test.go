package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/config"
)

func TestLoad(t *testing.T) {
	t.Parallel()

	cfg, err := config.Load(t.Context(), func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9102", cfg.GRPCAddr)
	require.Equal(t, "postgres://postgres@127.0.0.1:5432/zimmer_lineage?sslmode=disable", cfg.DatabaseURL)
	require.Equal(t, "tadasant", cfg.AdminUser, "the admin defaults to tadasant")
	require.Equal(t, map[string]string{"lifecycle": "127.0.0.1:9101"}, cfg.EventConsumers, "lifecycle at its default address")
	require.Equal(t, 24*time.Hour, cfg.OutboxRetention)

	env := map[string]string{"LINEAGE_GRPC_ADDR": "0.0.0.0:7000", "LINEAGE_LOG_LEVEL": "debug"}
	cfg, err = config.Load(t.Context(), func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0:7000", cfg.GRPCAddr)
	require.Equal(t, "debug", cfg.LogLevel)

	_, err = config.Load(t.Context(), func(k string) string { return map[string]string{"LINEAGE_DATABASE_URL": "mysql://x"}[k] })
	require.Error(t, err)

	cfg, err = config.Load(t.Context(), func(k string) string { return map[string]string{"ZIMMER_ADMIN_USER": "juliehazz"}[k] })
	require.NoError(t, err)
	require.Equal(t, "juliehazz", cfg.AdminUser)
	_, err = config.Load(t.Context(), func(k string) string { return map[string]string{"ZIMMER_ADMIN_USER": "Not A Key"}[k] })
	require.ErrorContains(t, err, "ZIMMER_ADMIN_USER")

	cfg, err = config.Load(t.Context(), func(k string) string {
		return map[string]string{"LINEAGE_EVENT_CONSUMERS": "lifecycle=10.0.0.1:9101, audit = 10.0.0.2:9200"}[k]
	})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"lifecycle": "10.0.0.1:9101", "audit": "10.0.0.2:9200"}, cfg.EventConsumers)
	for _, bad := range []string{"lifecycle", "=127.0.0.1:9101", "lifecycle=", "lifecycle=127.0.0.1:9101,"} {
		_, err = config.Load(t.Context(), func(k string) string { return map[string]string{"LINEAGE_EVENT_CONSUMERS": bad}[k] })
		require.ErrorContains(t, err, "LINEAGE_EVENT_CONSUMERS", bad)
	}
	_, err = config.Load(t.Context(), func(k string) string { return map[string]string{"LINEAGE_OUTBOX_RETENTION": "0s"}[k] })
	require.ErrorContains(t, err, "LINEAGE_OUTBOX_RETENTION")
}
