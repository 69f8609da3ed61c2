// Package grpcserver builds the gRPC server every service runs: one logging
// interceptor, authentication and authorization by each method's access
// class (auth.go), panic recovery, the standard health service and
// reflection.
package grpcserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// MaxMessageBytes bounds one gRPC message, received or sent, on every
// server and client (grpcclient). gRPC's default of 4 MiB is smaller than
// valid traffic: a session at every limit is about 4 MB (a 500,000-character
// prompt of 4-byte characters is 2 MB, and custom_metadata's 256 KiB of JSON
// can grow fivefold as protobuf), and the gateway forwards request bodies of
// up to 8 MiB, which protobuf may grow as much. A request the transport
// refused would answer with gRPC's own text instead of the service's
// refusal naming the field, so the bound is set above all of that.
const MaxMessageBytes = 64 << 20

// MaxRecursion is how many levels of nested messages a request may have and
// still be decoded, so that the service, not the transport, refuses what
// nests too deeply, naming the field. Protobuf stops at 10,000 by default,
// and that is fewer than the gateway lets through: its JSON decoder
// (protojson) also stops at 10,000 but counts about two levels for each
// level of a JSON object inside google.protobuf.Struct, where the binary
// form counts three, so a body the gateway accepted failed to decode here
// and answered Internal.
const MaxRecursion = 1 << 15

// MaxConnectionAge is how long a client's connection lives before the
// server asks it to reconnect (a GOAWAY; calls under way finish). A caller
// dialling dns:/// over replicas (grpcclient, PL-25) resolves again only
// when a connection ends, so without an age a replica added by a scale-up
// would take no calls until something failed; with it, each caller finds
// it within about this long (gRPC adds ±10 % jitter so callers do not all
// reconnect at once).
const MaxConnectionAge = 5 * time.Minute

// Server is a gRPC server with its health service.
type Server struct {
	*grpc.Server
	Health *health.Server
	logger *slog.Logger
	probes []Probe
	// probeInterval and probeTimeout: ProbeInterval and ProbeTimeout
	// unless a test sets them.
	probeInterval, probeTimeout time.Duration
}

// New returns a server whose health reports NOT_SERVING until the caller
// marks it serving. Every call except health and reflection is
// authenticated and authorized by auth and its method's access class; the
// handler finds the effective principal with principal.FromContext.
func New(logger *slog.Logger, auth Auth) *Server {
	authz := NewAuthorizer(auth)
	s := &Server{
		Server: grpc.NewServer(
			grpc.ChainUnaryInterceptor(
				logUnary(logger),
				recoverUnary(logger),
				authUnary(authz),
			),
			grpc.ChainStreamInterceptor(authStream(authz)),
			// Request rate, errors and latency by method, through the
			// process's meter provider (package metrics; a no-op unless
			// <SERVICE>_METRICS_ADDR is set).
			grpc.StatsHandler(otelgrpc.NewServerHandler()),
			grpc.MaxRecvMsgSize(MaxMessageBytes),
			grpc.MaxSendMsgSize(MaxMessageBytes),
			grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: MaxConnectionAge}),
			grpc.ForceServerCodecV2(deepCodec{encoding.GetCodecV2(grpcproto.Name)}),
		),
		Health:        health.NewServer(),
		logger:        logger,
		probeInterval: ProbeInterval,
		probeTimeout:  ProbeTimeout,
	}
	s.Health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(s.Server, s.Health)
	reflection.Register(s.Server)
	return s
}

// deepCodec is gRPC's protobuf codec, decoding up to MaxRecursion levels.
type deepCodec struct{ encoding.CodecV2 }

func (c deepCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return proto.UnmarshalOptions{RecursionLimit: MaxRecursion}.Unmarshal(buf.ReadOnlyData(), m)
}

// Listen opens a TCP listener; "127.0.0.1:0" picks a free port.
func Listen(addr string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for gRPC on %s: %w", addr, err)
	}
	return lis, nil
}

// Serve serves on lis, marking health SERVING (while its probes pass: see
// AddProbe), until ctx is done; then it reports NOT_SERVING and stops
// gracefully, forcing the stop after grace.
func (s *Server) Serve(ctx context.Context, lis net.Listener, grace time.Duration) error {
	s.Health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.Health.SetServingStatus(LivenessService, healthpb.HealthCheckResponse_SERVING)
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); s.watchProbes(watchCtx, s.probeInterval, s.probeTimeout) }()
	defer func() { stopWatch(); <-watched }()
	errc := make(chan error, 1)
	go func() { errc <- s.Server.Serve(lis) }()
	s.logger.Info("grpc serving", "addr", lis.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("serve gRPC: %w", err)
	case <-ctx.Done():
	}
	stopWatch()
	<-watched
	s.Health.Shutdown()
	stopped := make(chan struct{})
	go func() { s.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(grace):
		s.Stop()
	}
	if err := <-errc; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serve gRPC: %w", err)
	}
	return nil
}

func logUnary(logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := h(ctx, req)
		code := status.Code(err)
		level := slog.LevelInfo
		if code == codes.Internal || code == codes.Unknown {
			level = slog.LevelError
		}
		attrs := []any{"method", info.FullMethod, "code", code.String(), "duration_ms", time.Since(start).Milliseconds()}
		if err != nil {
			attrs = append(attrs, "error", err.Error())
		}
		if !strings.HasPrefix(info.FullMethod, "/grpc.health.") {
			logger.Log(ctx, level, "grpc call", attrs...)
		}
		return resp, err
	}
}

func recoverUnary(logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				logger.ErrorContext(ctx, "panic in gRPC handler", "method", info.FullMethod, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				err = status.Error(codes.Internal, "internal error")
			}
		}()
		return h(ctx, req)
	}
}
