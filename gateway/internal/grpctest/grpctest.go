// Package grpctest runs real gRPC servers on 127.0.0.1 for the gateway's
// tests: the platform's server (API-key auth, health) with whatever services
// a test registers.
package grpctest

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/zimmerhq/zimmer/services/platform/apikey"
	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// Serve starts a server that requires key (when not empty), registers the
// services with register (may be nil: health only), and stops it when the
// test ends. It returns the server's address; its health reports SERVING.
func Serve(t testing.TB, key string, register func(*grpc.Server)) string {
	t.Helper()
	gs := grpcserver.New(slogx.Discard(), apikey.Parse(key))
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
