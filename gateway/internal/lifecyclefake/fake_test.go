package lifecyclefake_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// Every unary RPC of the service is recorded and answered, so a new RPC cannot
// fall through to Unimplemented unnoticed.
func TestEveryMethodIsRecordedAndAnswered(t *testing.T) {
	t.Parallel()
	fake := lifecyclefake.New()
	// As a service: every method, the admin ones too, reaches the fake.
	conn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))

	// The lifecycle process serves both services; the fake records both.
	services := []protoreflect.ServiceDescriptor{
		lifecyclev1.File_zimmer_lifecycle_v1_lifecycle_service_proto.Services().ByName("LifecycleService"),
		lifecyclev1.File_zimmer_lifecycle_v1_trigger_service_proto.Services().ByName("TriggerService"),
	}
	newMessage := func(md protoreflect.MessageDescriptor) proto.Message {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
		require.NoError(t, err)
		return mt.New().Interface()
	}
	total := 0
	for _, sd := range services {
		methods := sd.Methods()
		for i := range methods.Len() {
			m := methods.Get(i)
			if m.IsStreamingServer() || m.IsStreamingClient() {
				continue // WatchSessionChanges: the console's own tests drive it
			}
			resp := newMessage(m.Output())
			err := conn.Invoke(t.Context(), "/"+string(sd.FullName())+"/"+string(m.Name()), newMessage(m.Input()), resp)
			require.NoError(t, err, m.Name())
			if fd := m.Output().Fields().ByName("session"); fd != nil {
				require.True(t, proto.Equal(lifecyclefake.Session(), resp.ProtoReflect().Get(fd).Message().Interface()), m.Name())
			}
			if fd := m.Output().Fields().ByName("trigger"); fd != nil {
				require.True(t, proto.Equal(lifecyclefake.Trigger(), resp.ProtoReflect().Get(fd).Message().Interface()), m.Name())
			}
			require.Len(t, fake.Calls(string(m.Name())), 1, "%s is recorded under its name", m.Name())
			total++
		}
	}
	require.Len(t, fake.Calls(), total)

	fake.Answer("GetSession", nil, status.Error(codes.NotFound, "no such session"))
	_, err := lifecyclev1.NewLifecycleServiceClient(conn).GetSession(t.Context(), &lifecyclev1.GetSessionRequest{SessionId: "9"})
	require.Equal(t, codes.NotFound, status.Code(err))
	calls := fake.Calls("GetSession")
	require.True(t, proto.Equal(&lifecyclev1.GetSessionRequest{SessionId: "9"}, calls[len(calls)-1].Request))
}
