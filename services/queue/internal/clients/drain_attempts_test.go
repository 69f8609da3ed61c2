package clients_test

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/queue/internal/clients"
	"github.com/zimmerhq/zimmer/services/queue/internal/drain"
)

// deletedSession is a session lifecycle answers NotFound for.
const deletedSession = 6

// drainLifecycleServer answers RecordDrainAttempt from a table by session
// and GetSession for the sessions it knows.
type drainLifecycleServer struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	attempts map[int64]*lifecyclev1.RecordDrainAttemptResponse
	statuses map[int64]string
}

func (f *drainLifecycleServer) RecordDrainAttempt(_ context.Context, req *lifecyclev1.RecordDrainAttemptRequest) (*lifecyclev1.RecordDrainAttemptResponse, error) {
	if r, ok := f.attempts[req.GetSessionId()]; ok {
		return r, nil
	}
	if req.GetSessionId() == deletedSession {
		return nil, status.Errorf(codes.NotFound, "session %d not found", deletedSession)
	}
	return nil, status.Errorf(codes.Unavailable, "lifecycle is restarting")
}

func (f *drainLifecycleServer) GetSession(_ context.Context, req *lifecyclev1.GetSessionRequest) (*lifecyclev1.GetSessionResponse, error) {
	id, err := strconv.ParseInt(req.GetSessionId(), 10, 64)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "want a numeric id, got %q", req.GetSessionId())
	}
	s, ok := f.statuses[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no session %d", id)
	}
	return &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: id, Status: s}}, nil
}

func newDrainLifecycle(t *testing.T, srv *drainLifecycleServer) *clients.DrainLifecycle {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	lifecyclev1.RegisterLifecycleServiceServer(g, srv)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return clients.NewDrainLifecycle(conn)
}

func TestDrainLifecycleRecordsAttempts(t *testing.T) {
	t.Parallel()
	l := newDrainLifecycle(t, &drainLifecycleServer{attempts: map[int64]*lifecyclev1.RecordDrainAttemptResponse{
		1: {Attempts: 2},
		2: {Refusal: lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BLOCKED_ON_ELICITATION, Message: "blocked on an elicitation"},
		3: {Refusal: lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_MCP_RETRY, Message: "an MCP retry is scheduled"},
		4: {Refusal: lifecyclev1.DeliveryRefusal(99), Message: "a refusal from a newer lifecycle"},
	}})
	ctx := context.Background()
	for _, tc := range []struct {
		session int64
		want    drain.Attempt
	}{
		{1, drain.Attempt{Counted: true, Attempts: 2}},
		{2, drain.Attempt{Refusal: "blocked_on_elicitation", Message: "blocked on an elicitation"}},
		{3, drain.Attempt{Refusal: "mcp_retry", Message: "an MCP retry is scheduled"}},
		{4, drain.Attempt{Refusal: "99", Message: "a refusal from a newer lifecycle"}},
	} {
		got, err := l.RecordDrainAttempt(ctx, tc.session)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "session %d", tc.session)
	}
	_, err := l.RecordDrainAttempt(ctx, 5)
	require.Equal(t, codes.Unavailable, status.Code(err), "lifecycle's error is kept: %v", err)
	// A deleted session is no failed attempt: it is gone, and the drain
	// ends on it.
	got, err := l.RecordDrainAttempt(ctx, deletedSession)
	require.NoError(t, err)
	require.Equal(t, drain.Attempt{Gone: true, Message: "session 6 not found"}, got)
}

func TestDrainLifecycleReadsStatuses(t *testing.T) {
	t.Parallel()
	l := newDrainLifecycle(t, &drainLifecycleServer{statuses: map[int64]string{7: rules.StatusArchived}})
	got, err := l.Status(context.Background(), 7)
	require.NoError(t, err)
	require.Equal(t, rules.StatusArchived, got)
	_, err = l.Status(context.Background(), 8)
	require.ErrorIs(t, err, drain.ErrSessionNotFound)
}
