package devstack

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// pollInterval paces readiness checks: quick enough to not slow start-up, slow
// enough to not flood logs.
const pollInterval = 200 * time.Millisecond

// WaitGRPCServing polls the standard gRPC health service (overall status,
// service "") at addr until it reports SERVING or ctx ends. md, if any, is
// sent with each check (e.g. an API key, in case the server checks it for all
// methods).
func WaitGRPCServing(ctx context.Context, addr string, md metadata.MD) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	var last error
	for {
		cctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(ctx, md), 2*time.Second)
		resp, err := client.Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		switch {
		case err != nil:
			last = err
		case resp.GetStatus() == healthpb.HealthCheckResponse_SERVING:
			return nil
		default:
			last = fmt.Errorf("status %s", resp.GetStatus())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for gRPC health on %s: %w (last: %w)", addr, ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// WaitHTTPOK polls url until it answers 200 or ctx ends.
func WaitHTTPOK(ctx context.Context, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %w)", url, ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}
