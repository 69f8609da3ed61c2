package metrics_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/zimmerhq/zimmer/services/platform/metrics"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

func TestParseAddr(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "", want: ""},
		{in: ":9464", want: ":9464"},
		{in: "0.0.0.0:9464", want: "0.0.0.0:9464"},
		{in: "127.0.0.1:0", want: "127.0.0.1:0"},
		{in: "9464", err: "want host:port"},
		{in: "host:", err: "want host:port"},
		{in: "host:http2x", err: "not a number"},
	} {
		got, err := metrics.ParseAddr("RUNNER_METRICS_ADDR", tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "RUNNER_METRICS_ADDR") {
				t.Errorf("ParseAddr(%q) = %q, %v; want an error naming the variable and %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseAddr(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestWithoutAnAddressNothingIsInstalled(t *testing.T) {
	exp, err := metrics.Start("runner", "", slogx.Discard())
	if err != nil || exp != nil {
		t.Fatalf("Start without an address = %v, %v; want nil, nil", exp, err)
	}
	if exp.Addr() != "" || exp.TemporalHandler(slogx.Discard()) != nil {
		t.Fatal("a nil exporter must have no address and no Temporal handler")
	}
	exp.Close() // a no-op, never a panic
}

// TestServesZimmersAndTheRuntimesMetrics: an instrument made from Meter
// after Start is scraped with its service label, beside the Go runtime's.
func TestServesZimmersAndTheRuntimesMetrics(t *testing.T) {
	exp, err := metrics.Start("runner", "127.0.0.1:0", slogx.Discard())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- exp.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		exp.Close()
	})

	turns, err := metrics.Meter().Int64Counter("zimmer.test.turns", metric.WithUnit("{turn}"))
	if err != nil {
		t.Fatal(err)
	}
	turns.Add(ctx, 3)

	body := scrape(t, "http://"+exp.Addr()+metrics.Path)
	for _, want := range []string{
		`zimmer_test_turns_total{otel_scope_name="github.com/zimmerhq/zimmer"`,
		`} 3`,
		`target_info{service_name="runner"`,
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape lacks %q:\n%s", want, body)
		}
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// FuzzParseAddr: whatever ParseAddr accepts is a host:port whose port is
// a number net.Listen takes, or "" (off).
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"", ":9464", "127.0.0.1:0", "[::1]:9464", "host:http", "9464", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := metrics.ParseAddr("X_METRICS_ADDR", in)
		if err != nil || got == "" {
			if err == nil && in != "" {
				t.Fatalf("ParseAddr(%q) = \"\" without an error", in)
			}
			return
		}
		_, port, err := net.SplitHostPort(got)
		if err != nil {
			t.Fatalf("ParseAddr(%q) = %q, not host:port: %v", in, got, err)
		}
		if _, err := net.LookupPort("tcp", port); err != nil {
			t.Fatalf("ParseAddr(%q) = %q, port not a number: %v", in, got, err)
		}
	})
}
