package grpcserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/zimmerhq/zimmer/services/platform/apikey"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// echo is a test service: Echo answers what it was sent; Accept decodes a
// google.protobuf.Value and answers nothing.
var echo = grpc.ServiceDesc{
	ServiceName: "test.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Echo", Handler: handler("Echo", func() proto.Message { return new(wrapperspb.BytesValue) }, false)},
		{MethodName: "Accept", Handler: handler("Accept", func() proto.Message { return new(structpb.Value) }, true)},
	},
}

func handler(name string, newMsg func() proto.Message, empty bool) grpc.MethodHandler {
	return func(_ any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
		msg := newMsg()
		if err := dec(msg); err != nil {
			return nil, err
		}
		h := func(context.Context, any) (any, error) {
			if empty {
				return new(wrapperspb.BytesValue), nil
			}
			return msg, nil
		}
		if in == nil {
			return h(ctx, msg)
		}
		return in(ctx, msg, &grpc.UnaryServerInfo{FullMethod: "/test.Echo/" + name}, h)
	}
}

// A server and a client built by the platform carry messages well beyond
// gRPC's 4 MiB default both ways, up to grpcserver.MaxMessageBytes: a valid
// session is about 4 MB and must never be refused by the transport.
func TestCarriesMessagesUpToTheBound(t *testing.T) {
	t.Parallel()
	srv := grpcserver.New(slogx.Discard(), apikey.Parse(""))
	srv.RegisterService(&echo, struct{}{})
	lis, err := grpcserver.Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, time.Second) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	conn, err := grpcclient.Dial(lis.Addr().String(), "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	big := wrapperspb.Bytes(make([]byte, 5<<20))
	out := new(wrapperspb.BytesValue)
	require.NoError(t, conn.Invoke(ctx, "/test.Echo/Echo", big, out))
	require.Len(t, out.GetValue(), 5<<20)

	// Beyond the bound the client refuses to send (the server would refuse
	// to receive).
	err = conn.Invoke(ctx, "/test.Echo/Echo", wrapperspb.Bytes(make([]byte, grpcserver.MaxMessageBytes)), out)
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "beyond the bound: %v", err)

	// A JSON object 4,000 levels deep, as the gateway's JSON decoder lets
	// through, is 12,000 message levels: protobuf's default limit of 10,000
	// would fail it as Internal before the service could refuse it.
	deep := structpb.NewStructValue(&structpb.Struct{})
	for range 4_000 {
		deep = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"n": deep}})
	}
	require.NoError(t, conn.Invoke(ctx, "/test.Echo/Accept", deep, out), "decoded, for the service to judge")
}
