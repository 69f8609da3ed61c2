package service_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/config"
	"github.com/zimmerhq/zimmer/services/lineage/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// TestRetractUncleEdgeOverGRPC drives the compensation the queue calls
// when a delivery fails through the real server, as the queue: a written
// edge retracted, an inversion undone, retracting twice, an outcome that
// changed nothing, and the refusals of a malformed call. Each withdrawal
// reaches the listed consumer with a line for each session.
func TestRetractUncleEdgeOverGRPC(t *testing.T) {
	t.Parallel()
	consumer := &recordingConsumer{}
	cfg := config.Config{
		Config: servicetest.Config(t, service.MigrationSets...),
		EventConsumers: map[string]string{"lifecycle": serve(t, func(s *grpc.Server) {
			lineagev1.RegisterLineageEventConsumerServiceServer(s, consumer)
		})},
	}
	svc := servicetest.New(t, service.NewFromConfig, cfg)
	servicetest.RunInBackground(t, svc.Run)
	client := newLineageClient(servicetest.DialAsService(t, svc.Addr(), "queue"))
	ctx := t.Context()
	for _, id := range []int64{51, 52} {
		_, err := client.ConsumeSessionEvent(ctx, created(fmt.Sprintf("6b0e7a4e-0000-4000-8000-0000000000%d", id),
			&lifecyclev1.Session{Id: id, Title: "t", AgentRoot: "zimmer", Status: "waiting", Genesis: "api", SchedulingClass: "spot"}))
		require.NoError(t, err)
	}
	uncles := func(id int64) []int64 {
		t.Helper()
		h, err := client.GetSessionHierarchy(ctx, &lineagev1.GetSessionHierarchyRequest{SessionId: id})
		require.NoError(t, err)
		for _, n := range h.GetSessionHierarchy().GetNodes() {
			if n.GetId() == id {
				return n.GetUncleSessionIds()
			}
		}
		t.Fatalf("session %d not in its own hierarchy", id)
		return nil
	}
	record := func(acting, target int64) lineagev1.UncleEdgeOutcome {
		t.Helper()
		rec, err := client.RecordUncleEdge(ctx, &lineagev1.RecordUncleEdgeRequest{ActingSessionId: acting, TargetSessionId: target, EntryPoint: "rest.follow_up"})
		require.NoError(t, err)
		return rec.GetOutcome()
	}
	retract := func(acting, target int64, recorded lineagev1.UncleEdgeOutcome) *lineagev1.RetractUncleEdgeResponse {
		t.Helper()
		resp, err := client.RetractUncleEdge(ctx, &lineagev1.RetractUncleEdgeRequest{
			ActingSessionId: acting, TargetSessionId: target, Recorded: recorded, EntryPoint: "rest.follow_up",
		})
		require.NoError(t, err)
		require.NotEmpty(t, resp.GetMessage())
		return resp
	}

	// Written, then its delivery failed.
	written := record(51, 52)
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, written)
	require.Equal(t, []int64{51}, uncles(52))
	require.True(t, retract(51, 52, written).GetRetracted())
	require.Empty(t, uncles(52))
	require.False(t, retract(51, 52, written).GetRetracted(), "twice undoes nothing")

	// Inverted, then its delivery failed: the old direction comes back.
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, record(52, 51))
	inverted := record(51, 52)
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_INVERTED, inverted)
	require.Equal(t, []int64{51}, uncles(52))
	require.True(t, retract(51, 52, inverted).GetRetracted())
	require.Empty(t, uncles(52))
	require.Equal(t, []int64{52}, uncles(51))

	// An outcome that changed nothing is retracted as nothing.
	self := record(51, 51)
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_SELF, self)
	require.False(t, retract(51, 51, self).GetRetracted())
	require.Equal(t, []int64{52}, uncles(51))

	for _, tt := range []struct {
		req   *lineagev1.RetractUncleEdgeRequest
		field string
	}{
		{&lineagev1.RetractUncleEdgeRequest{ActingSessionId: 51, TargetSessionId: 52, EntryPoint: "rest.follow_up"}, "recorded"},
		{&lineagev1.RetractUncleEdgeRequest{ActingSessionId: 51, TargetSessionId: 52, Recorded: written}, "entry_point"},
		{&lineagev1.RetractUncleEdgeRequest{TargetSessionId: 52, Recorded: written, EntryPoint: "rest.follow_up"}, "acting_session_id"},
	} {
		_, err := client.RetractUncleEdge(ctx, tt.req)
		require.Equal(t, codes.InvalidArgument, status.Code(err), err)
		require.True(t, strings.HasPrefix(status.Convert(err).Message(), tt.field+":"), status.Convert(err).Message())
	}

	// Written, inverted and the two withdrawals reach the timelines' owner
	// in order; recordings that changed nothing and the refusals do not.
	require.Eventually(t, func() bool { return len(consumer.received()) == 5 }, 5*time.Second, 10*time.Millisecond)
	require.Never(t, func() bool { return len(consumer.received()) > 5 }, 300*time.Millisecond, 20*time.Millisecond)
	var events []*lineagev1.UncleEdgeChanged
	for _, e := range consumer.received() {
		events = append(events, e.GetUncleEdgeChanged())
	}
	wantOutcomes := []lineagev1.UncleEdgeOutcome{
		lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN,
		lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_UNSPECIFIED,
		lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN,
		lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_INVERTED,
		lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_UNSPECIFIED,
	}
	for i, e := range events {
		require.Equal(t, wantOutcomes[i], e.GetOutcome(), "event %d", i)
		require.Len(t, e.GetLines(), 2)
	}
	withdrawnWritten, withdrawnInversion := events[1], events[4]
	require.Equal(t, int64(52), withdrawnWritten.GetLines()[1].GetSessionId())
	require.Equal(t, "[Lineage] Session #51 is no longer an uncle of this session: its delivery to this session via rest.follow_up failed, "+
		"so the uncle edge #51 → #52 recorded for it was withdrawn (by the queue)", withdrawnWritten.GetLines()[1].GetMessage())
	require.Equal(t, int64(51), withdrawnInversion.GetLines()[0].GetSessionId())
	require.Equal(t, "[Lineage] Seniority inversion withdrawn: this session's delivery to session #52 via rest.follow_up failed "+
		"(uncle edge #51 → #52 withdrawn and #52 → #51 restored) (by the queue)", withdrawnInversion.GetLines()[0].GetMessage())
}
