package temporalx_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// BenchmarkTemporalCompression: the client's CPU per heartbeat-shaped call
// (a task token and a small JSON detail, what a runner sends for each
// sleeping agent) with the SDK's default gzip against none, as Dial now
// connects (issue 21). Needs ZIMMER_TEST_TEMPORAL_ADDRESS; the server
// refuses the made-up token, which costs both sides the same.
func BenchmarkTemporalCompression(b *testing.B) {
	addr := os.Getenv("ZIMMER_TEST_TEMPORAL_ADDRESS")
	if addr == "" {
		b.Skip("ZIMMER_TEST_TEMPORAL_ADDRESS not set")
	}
	req := &workflowservice.RecordActivityTaskHeartbeatRequest{
		TaskToken: []byte(strings.Repeat("t", 300)),
		Details: &commonpb.Payloads{Payloads: []*commonpb.Payload{{
			Metadata: map[string][]byte{"encoding": []byte("json/plain")},
			Data:     []byte(`{"TurnID":"3f6c1f7e-2b7a-4c36-9b8e-5f0f4f2b9a11","RuntimeSessionID":"a1b2c3d4-e5f6"}`),
		}}},
		Namespace: "default",
		Identity:  "bench@runner",
	}
	run := func(b *testing.B, c client.Client) {
		ctx := context.Background()
		var before, after syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		for b.Loop() {
			callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, _ = c.WorkflowService().RecordActivityTaskHeartbeat(callCtx, req)
			cancel()
		}
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		cpu := time.Duration(syscall.TimevalToNsec(after.Utime) + syscall.TimevalToNsec(after.Stime) -
			syscall.TimevalToNsec(before.Utime) - syscall.TimevalToNsec(before.Stime))
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	}
	b.Run("gzip", func(b *testing.B) {
		c, err := client.DialContext(context.Background(), client.Options{HostPort: addr, Logger: quiet{}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		run(b, c)
	})
	b.Run("dial", func(b *testing.B) {
		c, err := temporalx.Dial(context.Background(), addr, "default", slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		run(b, c)
	})
}

// quiet drops the SDK's logs.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
