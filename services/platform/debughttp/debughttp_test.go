package debughttp_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/debughttp"
)

func TestParseAddr(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]string{
		"":                "",
		"127.0.0.1:6060":  "127.0.0.1:6060",
		"127.0.0.1:0":     "127.0.0.1:0",
		":6060":           "127.0.0.1:6060",
		"localhost:6060":  "localhost:6060",
		"[::1]:6060":      "[::1]:6060",
		"127.10.0.3:6060": "127.10.0.3:6060",
	} {
		got, err := debughttp.ParseAddr("RUNNER_DEBUG_ADDR", value)
		require.NoError(t, err, value)
		require.Equal(t, want, got, value)
	}
	for value, says := range map[string]string{
		"0.0.0.0:6060":    "binds only loopback",
		"[::]:6060":       "binds only loopback",
		"10.0.0.5:6060":   "binds only loopback",
		"example.com:80":  "binds only loopback",
		"6060":            "want a loopback host:port",
		"127.0.0.1:http2": "is not a number",
		"127.0.0.1:70000": "is not a number",
		"127.0.0.1:":      "is not a number",
	} {
		_, err := debughttp.ParseAddr("RUNNER_DEBUG_ADDR", value)
		require.ErrorContains(t, err, says, value)
		require.ErrorContains(t, err, "RUNNER_DEBUG_ADDR", value)
	}
}

// FuzzParseAddr: whatever an operator sets, the address accepted is a
// loopback one (or off).
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"", ":0", "127.0.0.1:6060", "0.0.0.0:1", "[::1]:2", "localhost:3", "a:b", "[::ffff:127.0.0.1]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		got, err := debughttp.ParseAddr("X_DEBUG_ADDR", value)
		if err != nil || got == "" {
			return
		}
		host := got[:strings.LastIndex(got, ":")]
		host = strings.Trim(host, "[]")
		if host != "localhost" && !strings.HasPrefix(host, "127.") && host != "::1" && !strings.HasPrefix(host, "::ffff:127.") {
			t.Fatalf("ParseAddr(%q) = %q: not loopback", value, got)
		}
	})
}

func TestServeAnswersPprofAndStops(t *testing.T) {
	t.Parallel()
	srv, err := debughttp.Listen("127.0.0.1:0", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()

	resp, err := http.Get("http://" + srv.Addr() + "/debug/pprof/goroutine?debug=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "goroutine profile:")

	resp, err = http.Get("http://" + srv.Addr() + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "only /debug/pprof/ is served")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}
