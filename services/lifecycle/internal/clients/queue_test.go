package clients_test

import (
	"context"
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
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/clients"
)

// busyQueue holds another archive attempt's seal for its first busy
// SealQueue calls.
type busyQueue struct {
	queuev1.UnimplementedQueueServiceServer
	mu    sync.Mutex
	busy  int
	calls int
}

func (q *busyQueue) SealQueue(context.Context, *queuev1.SealQueueRequest) (*queuev1.SealQueueResponse, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls++
	if q.calls <= q.busy {
		return nil, status.Error(codes.Aborted, "another archive of this session is in progress; retry once it has ended")
	}
	return &queuev1.SealQueueResponse{RetirementClause: "nothing queued"}, nil
}

// An archive that finds another attempt's seal (an archive just committed
// whose retirement has not reached the queue yet) waits it out instead of
// failing: the seal ends within moments.
func TestSealQueueWaitsOutAnotherAttemptsSeal(t *testing.T) {
	t.Parallel()
	fake := &busyQueue{busy: 3}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	queuev1.RegisterQueueServiceServer(srv, fake)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///queue",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	seal, err := clients.Queue{Client: queuev1.NewQueueServiceClient(conn)}.SealQueue(context.Background(), 7, "attempt-b", false)
	require.NoError(t, err)
	require.Equal(t, "nothing queued", seal.RetirementClause)
	require.Equal(t, 4, fake.calls, "asked again until the other attempt's seal was gone")
}
