package service_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// TestSessionHierarchyOverGRPC drives the graph through the real server:
// events in, an uncle edge recorded, the hierarchy out, a deletion.
func TestSessionHierarchyOverGRPC(t *testing.T) {
	t.Parallel()
	client := setup(t)
	ctx := t.Context()

	router := int64(101)
	for _, e := range []*lifecyclev1.ConsumeSessionEventRequest{
		created("6b0e7a4e-0000-4000-8000-000000000101", &lifecyclev1.Session{
			Id: 101, Title: "Add spot vs priority classification", AgentRoot: "zimmer-router",
			Status: "running", Genesis: "web_ui", SchedulingClass: "priority",
		}),
		created("6b0e7a4e-0000-4000-8000-000000000102", &lifecyclev1.Session{
			Id: 102, Title: "Implement the genesis column", AgentRoot: "zimmer", Status: "running",
			Genesis: "web_ui", SchedulingClass: "priority", ParentSessionId: &router,
		}),
		created("6b0e7a4e-0000-4000-8000-000000000201", &lifecyclev1.Session{
			Id: 201, Title: "Review", AgentRoot: "zimmer", Status: "waiting", Genesis: "api", SchedulingClass: "spot",
		}),
	} {
		_, err := client.ConsumeSessionEvent(ctx, e)
		require.NoError(t, err)
	}

	rec, err := client.RecordUncleEdge(ctx, &lineagev1.RecordUncleEdgeRequest{
		ActingSessionId: 201, TargetSessionId: 102, EntryPoint: "mcp.manage_enqueued_messages.interrupt",
	})
	require.NoError(t, err)
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, rec.GetOutcome())
	require.NotEmpty(t, rec.GetMessage())

	rec, err = client.RecordUncleEdge(ctx, &lineagev1.RecordUncleEdgeRequest{ActingSessionId: 102, TargetSessionId: 101, EntryPoint: "rest.follow_up"})
	require.NoError(t, err)
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_SPAWN_ANCESTOR, rec.GetOutcome())

	got, err := client.GetSessionHierarchy(ctx, &lineagev1.GetSessionHierarchyRequest{SessionId: 102})
	require.NoError(t, err)
	h := got.GetSessionHierarchy()
	require.Equal(t, int64(101), h.GetOriginSessionId())
	require.Equal(t, []int64{101, 201}, h.GetRootSessionIds())
	require.False(t, h.GetTruncated())
	require.Equal(t, ""+
		"- #101 [zimmer-router] {web_ui · priority} Add spot vs priority classification\n"+
		"  - #102 [zimmer] {web_ui · priority} Implement the genesis column (uncle: #201) ← this session\n"+
		"- #201 [zimmer] {api · spot} Review\n",
		h.GetOutline())

	// The JSON the gateway will compose under session_hierarchy.
	raw, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(h)
	require.NoError(t, err)
	var asJSON map[string]any
	require.NoError(t, json.Unmarshal(raw, &asJSON))
	for _, key := range []string{"origin_session_id", "root_session_ids", "truncated", "truncation_reason", "nodes", "outline"} {
		require.Contains(t, asJSON, key)
	}
	node := asJSON["nodes"].([]any)[1].(map[string]any)
	for _, key := range []string{"id", "title", "agent_root", "status", "depth", "parent_session_id", "uncle_session_ids", "current", "genesis", "scheduling_class"} {
		require.Contains(t, node, key)
	}

	_, err = client.ConsumeSessionEvent(ctx, &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
		EventId: "6b0e7a4e-0000-4000-8000-000000000999", SessionId: 201,
		Payload: &lifecyclev1.SessionEvent_Deleted{Deleted: &lifecyclev1.SessionDeleted{SessionId: 201}},
	}})
	require.NoError(t, err)
	got, err = client.GetSessionHierarchy(ctx, &lineagev1.GetSessionHierarchyRequest{SessionId: 102})
	require.NoError(t, err)
	require.Equal(t, []int64{101}, got.GetSessionHierarchy().GetRootSessionIds())
	require.Empty(t, got.GetSessionHierarchy().GetNodes()[1].GetUncleSessionIds())

	_, err = client.GetSessionHierarchy(ctx, &lineagev1.GetSessionHierarchyRequest{SessionId: 201})
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = client.RecordUncleEdge(ctx, &lineagev1.RecordUncleEdgeRequest{ActingSessionId: 1, TargetSessionId: 2})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}
