package grpcclient_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

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
