// Package surface names the surface a call entered Zimmer through: the
// gateway declares it in gRPC metadata (after dropping every client header,
// so a caller cannot claim another), and services use it to say who acted,
// e.g. on the archive line. A call without it comes from an unrecorded
// caller; nothing is inferred.
package surface

import (
	"context"

	"google.golang.org/grpc/metadata"
)

// MetadataKey carries the surface.
const MetadataKey = "x-zimmer-surface"

// Surfaces.
const (
	REST    = "rest"
	MCP     = "mcp"
	MCPSelf = "mcp_self" // the self-session MCP tool group
	WebUI   = "web"
)

// Outgoing returns ctx declaring surface s to the called service.
func Outgoing(ctx context.Context, s string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, MetadataKey, s)
}

// Incoming returns the surface a call declared, or "".
func Incoming(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(MetadataKey); len(v) > 0 {
		return v[0]
	}
	return ""
}
