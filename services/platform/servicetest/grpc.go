package servicetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
)

// AssertServing waits (up to Timeout) until the standard health service at
// addr reports the server SERVING, then requires that reflection lists
// fullServiceName (e.g. "zimmer.queue.v1.QueueService") and resolves its
// descriptor, which is what grpcurl and other tooling need. Health and
// reflection never need an API key.
func AssertServing(t testing.TB, addr, fullServiceName string) {
	t.Helper()
	conn := dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()

	health := healthpb.NewHealthClient(conn)
	for {
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
		last := fmt.Sprintf("status %s, error %v", resp.GetStatus(), err)
		select {
		case <-ctx.Done():
			t.Fatalf("health at %s did not report SERVING within %s (last: %s)", addr, Timeout, last)
		case <-time.After(20 * time.Millisecond):
		}
	}

	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	require.NoError(t, err, "open reflection stream")
	defer stream.CloseSend() //nolint:errcheck // the stream ends with the test's context

	resp := reflect(t, stream, &reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	})
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	require.Contains(t, names, fullServiceName, "reflection lists the registered services")

	resp = reflect(t, stream, &reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: fullServiceName},
	})
	require.Nil(t, resp.GetErrorResponse(), "reflection resolves %s", fullServiceName)
	require.NotEmpty(t, resp.GetFileDescriptorResponse().GetFileDescriptorProto(), "reflection returns the descriptor of %s", fullServiceName)
}

// AssertStopped requires that nothing answers health at addr any more: the
// server has stopped and released its listener.
func AssertStopped(t testing.TB, addr string) {
	t.Helper()
	conn := dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	// Without WaitForReady a refused connection fails the call at once.
	_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	require.Equal(t, codes.Unavailable, status.Code(err), "health at %s after stop answered: %v", addr, err)
}

func reflect(t testing.TB, stream reflectionpb.ServerReflection_ServerReflectionInfoClient, req *reflectionpb.ServerReflectionRequest) *reflectionpb.ServerReflectionResponse {
	t.Helper()
	require.NoError(t, stream.Send(req), "send reflection request")
	resp, err := stream.Recv()
	require.NoError(t, err, "receive reflection response")
	return resp
}

func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	return Dial(t, addr, grpcclient.Anonymous())
}

// Dial connects to addr as id and closes the connection when the test ends.
func Dial(t testing.TB, addr string, id grpcclient.Identity) *grpc.ClientConn {
	t.Helper()
	conn, err := grpcclient.Dial(addr, id)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// DialAsService connects to addr as a Zimmer service named name, with the
// InternalToken every Config carries: what internal methods need.
func DialAsService(t testing.TB, addr, name string) *grpc.ClientConn {
	t.Helper()
	return Dial(t, addr, grpcclient.AsService(name, InternalToken))
}

// DialOperator connects to addr with OperatorKey: the public API.
func DialOperator(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	return Dial(t, addr, grpcclient.WithKey(OperatorKey))
}

// DialAdmin connects to addr with AdminKey: the public and admin methods.
func DialAdmin(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	return Dial(t, addr, grpcclient.WithKey(AdminKey))
}
