package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// TestListRecoveryCandidatesOverGRPC: the runner (internal) is shown a
// running session settled before the cutoff, with its job; a session
// changed after the cutoff is not; an operator may not ask, and a request
// without settled_before is refused naming it.
func TestListRecoveryCandidatesOverGRPC(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	runner := lifecyclev1.NewLifecycleServiceClient(servicetest.DialAsService(t, b.svc.Addr(), "runner"))

	settled := b.running(t)
	_, err := b.svc.Pool.Exec(ctx, `UPDATE sessions SET updated_at = now() - interval '1 hour' WHERE id = $1`, settled)
	require.NoError(t, err)
	b.running(t) // changed just now
	cutoff := time.Now().Add(-time.Minute)

	resp, err := runner.ListRecoveryCandidates(ctx, &lifecyclev1.ListRecoveryCandidatesRequest{SettledBefore: timestamppb.New(cutoff)})
	require.NoError(t, err)
	var mine []*lifecyclev1.RecoveryCandidate
	for _, c := range resp.GetCandidates() {
		if c.GetSessionId() == settled {
			mine = append(mine, c)
		}
		require.True(t, c.GetUpdatedAt().AsTime().Before(cutoff))
	}
	require.Len(t, mine, 1)
	require.Equal(t, "running", mine[0].GetStatus())
	require.Equal(t, "session-x/turn-1", mine[0].GetRunningJobId())

	_, err = runner.ListRecoveryCandidates(ctx, &lifecyclev1.ListRecoveryCandidatesRequest{})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.ErrorContains(t, err, "settled_before")

	_, err = b.operator.ListRecoveryCandidates(ctx, &lifecyclev1.ListRecoveryCandidatesRequest{SettledBefore: timestamppb.New(cutoff)})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}
