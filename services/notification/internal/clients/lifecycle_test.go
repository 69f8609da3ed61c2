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
	"github.com/zimmerhq/zimmer/services/notification/internal/clients"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
)

type lifecycleServer struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	sessions map[int64]*lifecyclev1.Session
}

func (f *lifecycleServer) GetSession(_ context.Context, req *lifecyclev1.GetSessionRequest) (*lifecyclev1.GetSessionResponse, error) {
	id, err := strconv.ParseInt(req.GetSessionId(), 10, 64)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "want a numeric id, got %q", req.GetSessionId())
	}
	if id == 99 {
		return nil, status.Error(codes.Unavailable, "lifecycle is restarting")
	}
	s, ok := f.sessions[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no session %d", id)
	}
	return &lifecyclev1.GetSessionResponse{Session: s}, nil
}

func TestLifecycleReadsSessions(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	lifecyclev1.RegisterLifecycleServiceServer(g, &lifecycleServer{sessions: map[int64]*lifecyclev1.Session{
		7: {Id: 7, Title: "Fix it", Status: "needs_input", NeedsInputCount: 3, PushNotifications: true},
	}})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	l := clients.NewLifecycle(conn)

	got, err := l.Get(context.Background(), 7)
	require.NoError(t, err)
	require.Equal(t, domain.Session{ID: 7, Title: "Fix it", Status: "needs_input", NeedsInputCount: 3, PushNotifications: true}, got)
	_, err = l.Get(context.Background(), 8)
	require.ErrorIs(t, err, domain.ErrSessionGone)
	_, err = l.Get(context.Background(), 99)
	require.Equal(t, codes.Unavailable, status.Code(err), "lifecycle's error is kept: %v", err)
	require.NotErrorIs(t, err, domain.ErrSessionGone)
}
