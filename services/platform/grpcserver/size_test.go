package grpcserver_test

import (
	"context"
	"testing"

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
)

// echo is a test service of public methods: Echo answers what it was
// sent; Accept decodes a google.protobuf.Value and answers nothing.
var echo = grpc.ServiceDesc{
	ServiceName: "sizetest.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		unaryMethod("sizetest.Echo", "Echo", func() proto.Message { return new(wrapperspb.BytesValue) },
			func(_ context.Context, m proto.Message) (proto.Message, error) { return m, nil }),
		unaryMethod("sizetest.Echo", "Accept", func() proto.Message { return new(structpb.Value) },
			func(context.Context, proto.Message) (proto.Message, error) { return new(wrapperspb.BytesValue), nil }),
	},
}

func init() {
	registerFixture("sizetest", "Echo", []fixtureMethod{
		{"Echo", "google.protobuf.BytesValue", "google.protobuf.BytesValue", public("")},
		{"Accept", "google.protobuf.Value", "google.protobuf.BytesValue", public("")},
	})
}

// A server and a client built by the platform carry messages well beyond
// gRPC's 4 MiB default both ways, up to grpcserver.MaxMessageBytes: a valid
// session is about 4 MB and must never be refused by the transport.
func TestCarriesMessagesUpToTheBound(t *testing.T) {
	t.Parallel()
	const key = "size-test-key"
	addr := serve(t, grpcserver.Auth{Operators: apikey.Parse(key)}, &echo)
	ctx := t.Context()

	conn, err := grpcclient.Dial(addr, grpcclient.WithKey(key))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	big := wrapperspb.Bytes(make([]byte, 5<<20))
	out := new(wrapperspb.BytesValue)
	require.NoError(t, conn.Invoke(ctx, "/sizetest.Echo/Echo", big, out))
	require.Len(t, out.GetValue(), 5<<20)

	// Beyond the bound the client refuses to send (the server would refuse
	// to receive).
	err = conn.Invoke(ctx, "/sizetest.Echo/Echo", wrapperspb.Bytes(make([]byte, grpcserver.MaxMessageBytes)), out)
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "beyond the bound: %v", err)

	// A JSON object 4,000 levels deep, as the gateway's JSON decoder lets
	// through, is 12,000 message levels: protobuf's default limit of 10,000
	// would fail it as Internal before the service could refuse it.
	deep := structpb.NewStructValue(&structpb.Struct{})
	for range 4_000 {
		deep = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"n": deep}})
	}
	require.NoError(t, conn.Invoke(ctx, "/sizetest.Echo/Accept", deep, out), "decoded, for the service to judge")
}
