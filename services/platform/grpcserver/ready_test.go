package grpcserver_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// TestHealthFollowsTheProbes: issue 20 item 8 — during a Postgres outage
// every service said SERVING while it answered every call Unavailable. A
// server's overall health is SERVING only while its probes (the service's
// database) pass, and comes back when they pass again.
func TestHealthFollowsTheProbes(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	srv := grpcserver.New(slogx.Discard(), grpcserver.Auth{})
	srv.AddProbe(grpcserver.Probe{Name: "database", Check: func(context.Context) error {
		if down.Load() {
			return errors.New("connection refused")
		}
		return nil
	}})
	lis, err := grpcserver.Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, time.Second) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	health := healthpb.NewHealthClient(conn)
	check := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		resp, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: service})
		require.NoError(t, err)
		return resp.GetStatus()
	}
	status := func() healthpb.HealthCheckResponse_ServingStatus { return check("") }
	wait := grpcserver.ProbeInterval + grpcserver.ProbeTimeout + 2*time.Second

	require.Eventually(t, func() bool { return status() == healthpb.HealthCheckResponse_SERVING }, wait, 50*time.Millisecond)
	down.Store(true)
	require.Eventually(t, func() bool { return status() == healthpb.HealthCheckResponse_NOT_SERVING }, wait, 50*time.Millisecond,
		"a server whose database is unreachable reports NOT_SERVING")
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, check(grpcserver.LivenessService),
		"while its liveness stays SERVING: restarting it would not bring the database back")
	down.Store(false)
	require.Eventually(t, func() bool { return status() == healthpb.HealthCheckResponse_SERVING }, wait, 50*time.Millisecond,
		"and SERVING again once it answers")
}
