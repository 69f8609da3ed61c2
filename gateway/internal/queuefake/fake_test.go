package queuefake_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/queuefake"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
)

// Every RPC of the service is recorded, so a new RPC cannot fall through
// to Unimplemented unnoticed; a call the fake refuses (no prompt, no such
// message) is refused as the queue would, never as unimplemented.
func TestEveryMethodIsRecorded(t *testing.T) {
	t.Parallel()
	fake := queuefake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))

	sd := queuev1.File_zimmer_queue_v1_queue_service_proto.Services().ByName("QueueService")
	methods := sd.Methods()
	newMessage := func(md protoreflect.MessageDescriptor) proto.Message {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
		require.NoError(t, err)
		return mt.New().Interface()
	}
	for i := range methods.Len() {
		m := methods.Get(i)
		err := conn.Invoke(t.Context(), "/"+string(sd.FullName())+"/"+string(m.Name()), newMessage(m.Input()), newMessage(m.Output()))
		require.NotEqual(t, codes.Unimplemented, status.Code(err), "%s: %v", m.Name(), err)
		require.Len(t, fake.Calls(string(m.Name())), 1, m.Name())
	}
	require.Len(t, fake.Calls(), methods.Len())
}

// A follow-up is delivered to an idle session and queued on a running one
// unless forced; a message sent now leaves the queue when the session is
// idle and goes to the front when it runs; a retired queue is undelivered.
func TestFollowUpAndSendNowFollowTheSessionsState(t *testing.T) {
	t.Parallel()
	fake := queuefake.New()
	q := queuev1.NewQueueServiceClient(grpctest.DialAsService(t, grpctest.Serve(t, fake.Register)))
	ctx := t.Context()

	idle, err := q.FollowUp(ctx, &queuev1.FollowUpRequest{SessionId: "1", Prompt: "now"})
	require.NoError(t, err)
	require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, idle.GetOutcome())
	require.NotEmpty(t, idle.GetJobId())

	fake.SetRunning("1", true)
	var ids []int64
	for _, prompt := range []string{"first", "second"} {
		queued, err := q.FollowUp(ctx, &queuev1.FollowUpRequest{SessionId: "1", Prompt: prompt})
		require.NoError(t, err)
		require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, queued.GetOutcome())
		require.Equal(t, queuefake.QueuedMessage, queued.GetMessage())
		ids = append(ids, queued.GetEnqueuedMessage().GetId())
	}
	forced, err := q.FollowUp(ctx, &queuev1.FollowUpRequest{SessionId: "1", Prompt: "now!", ForceImmediate: true})
	require.NoError(t, err)
	require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, forced.GetOutcome())

	front, err := q.SendEnqueuedMessageNow(ctx, &queuev1.SendEnqueuedMessageNowRequest{SessionId: "1", MessageId: ids[1]})
	require.NoError(t, err)
	require.False(t, front.GetDelivered())
	require.EqualValues(t, 1, front.GetEnqueuedMessage().GetPosition())
	fake.SetRunning("1", false)
	sent, err := q.SendEnqueuedMessageNow(ctx, &queuev1.SendEnqueuedMessageNowRequest{SessionId: "1", MessageId: ids[1]})
	require.NoError(t, err)
	require.True(t, sent.GetDelivered())

	fake.Retire("1")
	list, err := q.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{SessionId: "1"})
	require.NoError(t, err)
	var got []string
	for _, m := range list.GetEnqueuedMessages() {
		got = append(got, m.GetContent()+" "+m.GetStatus())
	}
	require.Equal(t, []string{"second sent", "first undelivered"}, got)

	_, err = q.FollowUp(ctx, &queuev1.FollowUpRequest{SessionId: "1"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	fake.FailWith(status.Error(codes.Unavailable, "down"))
	_, err = q.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{SessionId: "1"})
	require.Equal(t, codes.Unavailable, status.Code(err))
}
