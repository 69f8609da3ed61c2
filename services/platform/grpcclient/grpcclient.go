// Package grpcclient dials the other Zimmer services.
package grpcclient

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Dial returns a lazily-connecting client for addr that presents apiKey (when
// not empty) on every call. Services talk over loopback or a private network;
// transport security is the deployment's concern (see deploy/README.md).
func Dial(addr, apiKey string) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
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
