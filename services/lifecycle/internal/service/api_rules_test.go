package service_test

import (
	"context"
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
