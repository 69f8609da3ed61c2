// Package grpcclient dials the other Zimmer services.
package grpcclient

import (
	"context"
	"fmt"
	"time"

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

// Dial returns a lazily-connecting client for addr that presents apiKey (when
// not empty) on every call, carries messages as large as the servers take
// (grpcserver.MaxMessageBytes) and reconnects within a second of the peer
// coming back. Services talk over loopback or a private network;
// transport security is the deployment's concern (see deploy/README.md).
func Dial(addr, apiKey string) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(reconnect),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(grpcserver.MaxMessageBytes),
			grpc.MaxCallSendMsgSize(grpcserver.MaxMessageBytes),
		),
	}
	if apiKey != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(keyCredentials(apiKey)))
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return conn, nil
}

type keyCredentials string

func (k keyCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"x-api-key": string(k)}, nil
}

func (keyCredentials) RequireTransportSecurity() bool { return false }
