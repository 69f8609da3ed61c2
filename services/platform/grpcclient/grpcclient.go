// Package grpcclient dials the other Zimmer services.
package grpcclient

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
)

// reconnect is how a connection comes back after the service it reaches
// restarts. gRPC's default waits up to 120 s between attempts, so a caller
// kept answering "unavailable" for seconds after the service was back; a
// dial to a peer on loopback or a private network is cheap, so retrying it
// at most every second costs nothing and bounds that window to a second.
var reconnect = grpc.ConnectParams{
	Backoff: backoff.Config{
		BaseDelay:  50 * time.Millisecond,
		Multiplier: 1.6,
		Jitter:     0.2,
		MaxDelay:   time.Second,
	},
	MinConnectTimeout: 5 * time.Second,
}

// Identity is who a connection's calls present themselves as.
type Identity struct {
	metadata map[string]string
}

// AsService is a Zimmer service named name (lifecycle, gateway, …) proving
// it is one with the deployment's internal token (ZIMMER_INTERNAL_TOKEN).
// Internal methods accept only such callers; a call that also forwards a
// client's principal (principal.Outgoing on its context) is authorized as
// that client.
func AsService(name, internalToken string) Identity {
	return Identity{metadata: map[string]string{
		grpcserver.InternalTokenKey: internalToken,
		grpcserver.ServiceKey:       name,
	}}
}

// WithKey is a client presenting an operator or admin key (a tool, a test).
func WithKey(apiKey string) Identity {
	return Identity{metadata: map[string]string{"x-api-key": apiKey}}
}

// Anonymous presents nothing: enough for health and reflection only.
func Anonymous() Identity { return Identity{} }

// Dial returns a lazily-connecting client for addr whose every call
// presents id, carries messages as large as the servers take
// (grpcserver.MaxMessageBytes) and reconnects within a second of the peer
// coming back. A principal the caller put on a call's context with
// principal.Outgoing travels with that call. Services talk over loopback
// or a private network; transport security is the deployment's concern
// (see deploy/README.md and docs/security.md). extra adds to the options,
// e.g. the gateway's interceptor forwarding its client's principal.
func Dial(addr string, id Identity, extra ...grpc.DialOption) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(reconnect),
		// The caller's view of each call (package metrics).
		grpc.WithStatsHandler(otelgrpc.NewClientHandler()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(grpcserver.MaxMessageBytes),
			grpc.MaxCallSendMsgSize(grpcserver.MaxMessageBytes),
		),
	}
	if len(id.metadata) > 0 {
		opts = append(opts, grpc.WithPerRPCCredentials(callCredentials(id.metadata)))
	}
	conn, err := grpc.NewClient(addr, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return conn, nil
}

type callCredentials map[string]string

func (c callCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return c, nil
}

func (callCredentials) RequireTransportSecurity() bool { return false }
