package service_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
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

// cloneRunner answers GetClone with a state per session (none: NotFound).
type cloneRunner struct {
	runnerv1.UnimplementedRunnerServiceServer
	states *sync.Map // int64 → string
}

func (r cloneRunner) GetClone(_ context.Context, req *runnerv1.GetCloneRequest) (*runnerv1.GetCloneResponse, error) {
	id, _ := strconv.ParseInt(req.GetSessionId(), 10, 64)
	state, ok := r.states.Load(id)
	if !ok {
		return nil, status.Error(codes.NotFound, "no clone")
	}
	return &runnerv1.GetCloneResponse{Clone: &runnerv1.Clone{SessionId: id, State: state.(string)}}, nil
}

// Issue 23 rule 18: unarchive is a full restoration — needs_input, the
// failure and process state it was archived with cleared, one line saying
// so, and the answer says whether the clone comes back and whether it is
// recreated.
func TestUnarchiveIsAFullRestoration(t *testing.T) {
	t.Parallel()
	runner := cloneRunner{states: &sync.Map{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	runnerv1.RegisterRunnerServiceServer(srv, runner)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	b := setupWithConfig(t, func(c *config.Config) { c.RunnerAddr, c.RunnerTimeout = lis.Addr().String(), 5*time.Second })
	ctx := t.Context()

	failed := b.create(t, &lifecyclev1.CreateSessionRequest{})
	_, err = b.fire(t, failed.GetId(), "start", func(r *lifecyclev1.TransitionSessionRequest) { r.RunningJobId = "job-1" })
	require.NoError(t, err)
	_, err = b.fire(t, failed.GetId(), "fail", func(r *lifecyclev1.TransitionSessionRequest) { r.FailureReason = "the clone vanished" })
	require.NoError(t, err)
	_, err = b.fire(t, failed.GetId(), "archive")
	require.NoError(t, err)
	runner.states.Store(failed.GetId(), "preserved")

	resp, err := b.operator.UnarchiveSession(ctx, &lifecyclev1.UnarchiveSessionRequest{SessionId: strconv.FormatInt(failed.GetId(), 10)})
	require.NoError(t, err)
	s := resp.GetSession()
	require.Equal(t, "needs_input", s.GetStatus())
	require.Empty(t, s.GetFailureReason(), "failure_reason is stale state")
	require.Empty(t, s.GetRunningJobId())
	require.Empty(t, s.GetPausedBy())
	require.Nil(t, s.GetTrashAfter())
	require.True(t, resp.GetCloneRestored())
	require.True(t, resp.GetCloneRecreated(), "a preserved clone is re-cloned")
	lines := b.timeline(t, failed.GetId())
	require.Equal(t, byOperator("[State Machine] Session unarchived with full state restoration by an unrecorded caller: "+
		"archived → needs_input (unarchive_to_needs_input)"), lines[len(lines)-1].GetMessage())
	n := 0
	for _, l := range lines {
		if strings.Contains(l.GetMessage(), "unarchive") {
			n++
		}
	}
	require.Equal(t, 1, n, "one line")

	kept := b.create(t, &lifecyclev1.CreateSessionRequest{})
	_, err = b.fire(t, kept.GetId(), "archive")
	require.NoError(t, err)
	runner.states.Store(kept.GetId(), "retained")
	resp, err = b.operator.UnarchiveSession(ctx, &lifecyclev1.UnarchiveSessionRequest{SessionId: strconv.FormatInt(kept.GetId(), 10)})
	require.NoError(t, err)
	require.True(t, resp.GetCloneRestored())
	require.False(t, resp.GetCloneRecreated(), "a retained clone is put back as it stands")

	never := b.create(t, &lifecyclev1.CreateSessionRequest{})
	_, err = b.fire(t, never.GetId(), "archive")
	require.NoError(t, err)
	resp, err = b.operator.UnarchiveSession(ctx, &lifecyclev1.UnarchiveSessionRequest{SessionId: strconv.FormatInt(never.GetId(), 10)})
	require.NoError(t, err)
	require.False(t, resp.GetCloneRestored(), "no clone was ever made")
}
