package clients_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/runner/internal/clients"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// fakeQueue is an in-process QueueService answering DeliverNextMessage
// with what the test set.
type fakeQueue struct {
	queuev1.UnimplementedQueueServiceServer
	mu     sync.Mutex
	asked  []*queuev1.DeliverNextMessageRequest
	answer *queuev1.DeliverNextMessageResponse
	err    error
}

func (f *fakeQueue) DeliverNextMessage(_ context.Context, req *queuev1.DeliverNextMessageRequest) (*queuev1.DeliverNextMessageResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, req)
	return f.answer, f.err
}

func serveQueue(t *testing.T, q queuev1.QueueServiceServer) *clients.Queue {
	t.Helper()
	return clients.NewQueue(serve(t, func(s *grpc.Server) { queuev1.RegisterQueueServiceServer(s, q) }))
}

// serve runs the services register adds on an in-memory listener and
// returns a connection to them; both end with the test.
func serve(t *testing.T, register func(*grpc.Server)) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	register(srv)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestQueueDeliverNextMessage(t *testing.T) {
	t.Parallel()
	fake := &fakeQueue{answer: &queuev1.DeliverNextMessageResponse{
		Delivered: true, JobId: "queue/m1", Prompt: "the queued message",
		EnqueuedMessage: &queuev1.EnqueuedMessage{Id: 12},
	}}
	q := serveQueue(t, fake)

	got, err := q.DeliverNextMessage(t.Context(), 7, "session-7/turn-1")
	require.NoError(t, err)
	require.Equal(t, workflow.HandOver{Delivered: true, JobID: "queue/m1", Prompt: "the queued message"}, got)
	require.Len(t, fake.asked, 1)
	require.Equal(t, int64(7), fake.asked[0].GetSessionId())
	require.Equal(t, "session-7/turn-1", fake.asked[0].GetFromJobId(), "the hand-over names the turn that ended")

	fake.answer = &queuev1.DeliverNextMessageResponse{}
	got, err = q.DeliverNextMessage(t.Context(), 7, "queue/m1")
	require.NoError(t, err)
	require.Equal(t, workflow.HandOver{}, got, "nothing to deliver: the turn pauses")
}

func TestQueueErrorsAreRetriedUnlessRetryingCannotHelp(t *testing.T) {
	t.Parallel()
	fake := &fakeQueue{}
	q := serveQueue(t, fake)
	for code, refused := range map[codes.Code]bool{
		codes.Unavailable: false, codes.DeadlineExceeded: false, codes.Internal: false, codes.Aborted: false,
		codes.PermissionDenied: true, codes.Unauthenticated: true, codes.Unimplemented: true,
		codes.InvalidArgument: true, codes.NotFound: true, codes.FailedPrecondition: true,
	} {
		fake.err = status.Error(code, "no")
		_, err := q.DeliverNextMessage(t.Context(), 7, "session-7/turn-1")
		require.Error(t, err, code.String())
		var r *workflow.DrainRefusedError
		require.Equal(t, refused, errors.As(err, &r), "%s refused", code)
	}

	fake.err, fake.answer = nil, &queuev1.DeliverNextMessageResponse{Delivered: true, Prompt: "no job"}
	_, err := q.DeliverNextMessage(t.Context(), 7, "session-7/turn-1")
	var r *workflow.DrainRefusedError
	require.ErrorAs(t, err, &r, "a hand-over the turn cannot run under its job is refused")
}
