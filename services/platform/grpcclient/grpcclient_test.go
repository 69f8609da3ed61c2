package grpcclient_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
)

// A peer that restarts after an outage is reachable again within about a
// second of coming back (gRPC's default backoff would wait for minutes).
func TestReconnectsWithinASecondOfThePeerReturning(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits out a 6 s outage")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	stop := serve(t, ln)

	conn, err := grpcclient.Dial(addr, grpcclient.Anonymous())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	client := healthpb.NewHealthClient(conn)
	check := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	require.NoError(t, check())

	stop()
	// A long enough outage for the reconnect backoff to grow.
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		require.Error(t, check())
		time.Sleep(100 * time.Millisecond)
	}

	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err, "re-listen on the peer's address")
	back := time.Now()
	serve(t, ln)
	for check() != nil {
		require.Less(t, time.Since(back), 5*time.Second, "never reconnected")
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(back)
	t.Logf("reconnected %v after the peer came back", took)
	require.Less(t, took, 1500*time.Millisecond, "backoff caps at 1 s (+20%% jitter)")
}

func serve(t *testing.T, ln net.Listener) (stop func()) {
	t.Helper()
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return s.Stop
}

// Replicas listed in one address share the calls, and while one is down
// the other answers every call.
func TestSpreadsOverReplicasAndSkipsADeadOne(t *testing.T) {
	t.Parallel()
	var addrs []string
	var stops []func()
	for _, name := range []string{"a", "b"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addrs = append(addrs, ln.Addr().String())
		s := grpc.NewServer()
		h := health.NewServer()
		// The replica's own name is SERVING there and unknown elsewhere:
		// which replica answered shows in the status.
		h.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(s, h)
		go func() { _ = s.Serve(ln) }()
		t.Cleanup(s.Stop)
		stops = append(stops, s.Stop)
	}
	conn, err := grpcclient.Dial(addrs[0]+grpcclient.ReplicaSeparator+addrs[1], grpcclient.Anonymous())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	client := healthpb.NewHealthClient(conn)
	answered := func(n int) map[string]int {
		got := map[string]int{}
		for range n {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "a"})
			cancel()
			if err == nil {
				got["a"]++
			} else if status.Code(err) == codes.NotFound {
				got["b"]++
			} else {
				got[status.Code(err).String()]++
			}
		}
		return got
	}
	// Both replicas are connected once round_robin has seen them ready.
	require.Eventually(t, func() bool { got := answered(10); return got["a"] > 0 && got["b"] > 0 }, 5*time.Second, 50*time.Millisecond)
	got := answered(100)
	require.InDelta(t, 50, got["a"], 5, "round robin: %v", got)
	require.InDelta(t, 50, got["b"], 5, "round robin: %v", got)

	stops[0]()
	// The calls a's death caught fail; then b answers them all.
	require.Eventually(t, func() bool { return answered(20)["b"] == 20 }, 5*time.Second, 50*time.Millisecond)
}

func TestParseTarget(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"127.0.0.1:9101", "127.0.0.1:9101+127.0.0.1:9111", " lifecycle:9101 + lifecycle-2:9101 ", "dns:///lifecycle.zimmer.svc:9101"} {
		_, err := grpcclient.ParseTarget(ok)
		require.NoError(t, err, ok)
	}
	for _, bad := range []string{"", "127.0.0.1", "127.0.0.1:9101,127.0.0.1:9111", "127.0.0.1:9101+", "unix:///tmp/x", "dns:///"} {
		_, err := grpcclient.ParseTarget(bad)
		require.ErrorContains(t, err, "want host:port, host:port+host:port+…, or dns:///host:port", bad)
	}
}
