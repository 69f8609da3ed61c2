// Package grpctest runs real gRPC servers on 127.0.0.1 for the gateway's
// tests: the platform's server (authentication and authorization by each
// method's access class, health) with whatever services a test registers.
package grpctest

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/zimmerhq/zimmer/services/platform/apikey"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// The credentials of every server Serve starts, as the services have them:
// give the gateway under test the same InternalToken.
const (
	OperatorKey   = "grpctest-operator-key-0123"
	AdminKey      = "grpctest-admin-key-0123"
	InternalToken = "grpctest-internal-token-0123"
)

// Auth is what every server Serve starts accepts.
func Auth() grpcserver.Auth {
	return grpcserver.Auth{Operators: apikey.Parse(OperatorKey), Admins: apikey.Parse(AdminKey), InternalToken: InternalToken}
}

// Serve starts a server accepting Auth(), registers the services with
// register (may be nil: health only), and stops it when the test ends. It
// returns the server's address; its health reports SERVING.
func Serve(t testing.TB, register func(*grpc.Server)) string {
	t.Helper()
	gs := grpcserver.New(slogx.Discard(), Auth())
	if register != nil {
		register(gs.Server)
	}
	lis, err := grpcserver.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gs.Serve(ctx, lis, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("stop gRPC server: %v", err)
		}
	})
	return lis.Addr().String()
}

// DialAsService connects to addr as a Zimmer service (the gateway, say)
// and closes the connection when the test ends.
func DialAsService(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpcclient.Dial(addr, grpcclient.AsService("gateway", InternalToken))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// DeadAddr returns an address on 127.0.0.1 where nothing listens.
func DeadAddr(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
