package auth

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// ForwardPrincipalStream is ForwardPrincipal for streaming calls (the
// transcript's live follow).
func ForwardPrincipalStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if p, ok := principal.FromContext(ctx); ok {
		if md, _ := metadata.FromOutgoingContext(ctx); len(md.Get(principal.MetadataKey)) == 0 {
			var err error
			if ctx, err = principal.Outgoing(ctx, p); err != nil {
				return nil, err
			}
		}
	}
	return streamer(ctx, desc, cc, method, opts...)
}
