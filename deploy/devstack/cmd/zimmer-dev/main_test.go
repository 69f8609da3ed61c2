package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func testEnv(vars map[string]string) *env {
	return &env{getenv: func(k string) string { return vars[k] }, out: &bytes.Buffer{}, root: "/repo", dataDir: "/repo/.data"}
}

func TestServiceEnvCallerWins(t *testing.T) {
	t.Parallel()
	e := testEnv(map[string]string{
		"LINEAGE_GRPC_ADDR":      "127.0.0.1:9202",
		"LIFECYCLE_DATABASE_URL": "postgres://elsewhere/db",
	})
	addrs := e.grpcAddrs()
	require.Equal(t, "127.0.0.1:9202", addrs["lineage"])
	require.Equal(t, "127.0.0.1:9101", addrs["lifecycle"])

	common := map[string]string{"TEMPORAL_ADDRESS": "127.0.0.1:7233"}
	got := e.serviceEnv(services[0], "postgres://local/zimmer_lifecycle", addrs, common)
	require.Equal(t, map[string]string{
		"LIFECYCLE_DATABASE_URL":      "postgres://elsewhere/db",
		"LIFECYCLE_GRPC_ADDR":         "127.0.0.1:9101",
		"LIFECYCLE_LINEAGE_ADDR":      "127.0.0.1:9202",
		"LIFECYCLE_NOTIFICATION_ADDR": "127.0.0.1:9105",
		"TEMPORAL_ADDRESS":            "127.0.0.1:7233",
	}, got)

	gw := e.gatewayEnv(addrs, ":8080", common)
	require.Equal(t, ":8080", gw["GATEWAY_HTTP_ADDR"])
	require.Equal(t, "127.0.0.1:9202", gw["GATEWAY_LINEAGE_ADDR"])
	require.Equal(t, "127.0.0.1:9105", gw["GATEWAY_NOTIFICATION_ADDR"])
}

func TestCompactLogLine(t *testing.T) {
	t.Parallel()
	got := compactLogLine([]byte(`{"time":"2026-01-01T00:00:00Z","level":"INFO","msg":"rpc","method":"/x.v1.S/Get","code":"OK"}`))
	require.Equal(t, "INFO  rpc code=OK method=/x.v1.S/Get", got)
	require.Equal(t, "panic: boom", compactLogLine([]byte("panic: boom")))
}

func TestDialable(t *testing.T) {
	t.Parallel()
	require.Equal(t, "127.0.0.1:8080", dialable(":8080"))
	require.Equal(t, "127.0.0.1:8080", dialable("0.0.0.0:8080"))
	require.Equal(t, "10.0.0.1:8080", dialable("10.0.0.1:8080"))
}

func TestPrintBox(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	printBox(&b, [][2]string{{"REST", "http://127.0.0.1:8080/api/v1"}, {"API key", "k"}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 4)
	for _, l := range lines[1:] {
		require.Equal(t, len([]rune(lines[0])), len([]rune(l)), "all box lines have the same width")
	}
}
