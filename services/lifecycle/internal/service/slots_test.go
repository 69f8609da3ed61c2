package service_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// The turn slots over gRPC (LC-36): the limit is an admin's to read and
// change, never an operator's; the runner's acquire and release are
// internal, and so is a node's report of its own limit; a view other than ranked, or the ranked view with filters it
// does not take, is refused saying what to send.
func TestTurnSlotsOverGRPC(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()

	_, err := b.operator.UpdateTurnSlots(ctx, &lifecyclev1.UpdateTurnSlotsRequest{Limit: proto.Int32(2)})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "an operator key does not size the fleet")
	_, err = b.operator.AcquireTurnSlot(ctx, &lifecyclev1.AcquireTurnSlotRequest{SessionId: 1, TurnId: "t"})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "internal: the runner's")
	_, err = b.client.AcquireTurnSlot(ctx, &lifecyclev1.AcquireTurnSlotRequest{SessionId: 1, TurnId: "t"})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "internal: not even an admin key's")
	_, err = b.client.SetNodeTurnSlots(ctx, &lifecyclev1.SetNodeTurnSlotsRequest{Node: "n1", Limit: proto.Int32(0)})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "a node's own limit is the node's to report (LC-38)")
	_, err = b.operator.SetNodeTurnSlots(ctx, &lifecyclev1.SetNodeTurnSlotsRequest{Node: "n1", Limit: proto.Int32(0)})
	require.Equal(t, codes.PermissionDenied, status.Code(err))

	resp, err := b.client.GetTurnSlots(ctx, &lifecyclev1.GetTurnSlotsRequest{})
	require.NoError(t, err)
	require.Equal(t, "unlimited", resp.GetSlots().GetSource())
	require.Nil(t, resp.GetSlots().Limit)

	up, err := b.client.UpdateTurnSlots(ctx, &lifecyclev1.UpdateTurnSlotsRequest{Limit: proto.Int32(2)})
	require.NoError(t, err)
	require.Equal(t, int32(2), up.GetSlots().GetLimit())
	require.Equal(t, "admin", up.GetSlots().GetSource())
	for _, bad := range []*lifecyclev1.UpdateTurnSlotsRequest{
		{}, {Limit: proto.Int32(-1)}, {Limit: proto.Int32(1), UseEnvironment: true},
	} {
		_, err := b.client.UpdateTurnSlots(ctx, bad)
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v: %v", bad, err)
	}

	_, err = b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{View: "fastest"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), `"ranked"`)
	_, err = b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{View: "ranked", Q: "x"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	ranked, err := b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{View: "ranked"})
	require.NoError(t, err)
	require.Empty(t, ranked.GetSessions())
}
