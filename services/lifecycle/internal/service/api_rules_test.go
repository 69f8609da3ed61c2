package service_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// Issue 23 rule 20: GET /sessions leaves the trash out unless asked for it
// (show_archived, or archived among the statuses).
func TestListLeavesArchivedOutUnlessAsked(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	live := b.create(t, &lifecyclev1.CreateSessionRequest{})
	trashed := b.create(t, &lifecyclev1.CreateSessionRequest{})
	_, err := b.fire(t, trashed.GetId(), "archive")
	require.NoError(t, err)

	ids := func(req *lifecyclev1.ListSessionsRequest) []int64 {
		t.Helper()
		resp, err := b.client.ListSessions(ctx, req)
		require.NoError(t, err)
		var out []int64
		for _, s := range resp.GetSessions() {
			out = append(out, s.GetId())
		}
		require.EqualValues(t, len(out), resp.GetPagination().GetTotalCount(), "the count is the filtered one")
		return out
	}
	require.Equal(t, []int64{live.GetId()}, ids(&lifecyclev1.ListSessionsRequest{}), "no filter: the trash is left out")
	require.Equal(t, []int64{trashed.GetId(), live.GetId()}, ids(&lifecyclev1.ListSessionsRequest{ShowArchived: true}))
	require.Equal(t, []int64{trashed.GetId()}, ids(&lifecyclev1.ListSessionsRequest{Status: []string{"archived"}}))
	require.Equal(t, []int64{trashed.GetId(), live.GetId()}, ids(&lifecyclev1.ListSessionsRequest{Status: []string{"archived", "waiting"}}))
	require.Equal(t, []int64{live.GetId()}, ids(&lifecyclev1.ListSessionsRequest{Status: []string{"waiting"}, ShowArchived: true}),
		"a status filter is the filter: show_archived widens only the unfiltered list")
}

// Issue 23 rule 16: a blank goal never replaces a real one, and the same
// goal again writes nothing about the goal.
func TestDeliveredGoalNeverBlankedNorRepeated(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	q := b.queue(t)
	ctx := t.Context()
	id := b.needsInput(t)

	deliver := func(n int, goal string) string {
		t.Helper()
		resp, err := q.DeliverTurn(ctx, idle(&lifecyclev1.DeliverTurnRequest{SessionId: id,
			DeliveryId: fmt.Sprintf("queue/message/%d", n), Goal: goal, What: fmt.Sprintf("queued message #%d", n)}))
		require.NoError(t, err)
		require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED, resp.GetRefusal())
		lines := b.timeline(t, id)
		_, err = b.fire(t, id, "pause")
		require.NoError(t, err)
		return lines[len(lines)-1].GetMessage()
	}
	require.Equal(t, "[Queue] delivered queued message #1 as the next turn; it set the session's goal (by the queue)", deliver(1, "green CI"))
	require.Equal(t, "[Queue] delivered queued message #2 as the next turn (by the queue)", deliver(2, " \n\t"))
	require.Equal(t, "green CI", b.get(t, id).GetGoal(), "a blank goal never replaces a real one")
	require.Equal(t, "[Queue] delivered queued message #3 as the next turn (by the queue)", deliver(3, "green CI"),
		"the same goal again says nothing about the goal")
	require.Equal(t, "[Queue] delivered queued message #4 as the next turn; it set the session's goal (by the queue)", deliver(4, "ship it"))
	require.Equal(t, "ship it", b.get(t, id).GetGoal())
}
