package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"

	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
)

// The spot queue through MCP (LC-36): action_session pause_into_spot_queue
// is PauseIntoSpotQueue, and the session's answer says why and where it
// waits; quick_search_sessions view ranked lists the line with each place.
func TestTheSpotQueueThroughMCP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=sessions")
	since := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	waiting := &lifecyclev1.Session{Id: 4, Status: "waiting", SchedulingClass: "spot", Precedence: 3,
		SlotWait: &lifecyclev1.SlotWait{Reason: "spot_queue", Position: 2, Since: timestamppb.New(since)}}

	b.fake.Answer("PauseIntoSpotQueue", &lifecyclev1.PauseIntoSpotQueueResponse{Session: waiting,
		Message: "Session 4 sleeps in the spot queue with no wake armed."}, nil)
	res := call(t, c, "action_session", map[string]any{"action": "pause_into_spot_queue", "session_id": "4"})
	require.False(t, res.IsError, textOf(res))
	require.True(t, proto.Equal(&lifecyclev1.PauseIntoSpotQueueRequest{SessionId: "4"}, lastCall(t, b.fake).Request))
	text := textOf(res)
	require.True(t, strings.HasPrefix(text, "## "+mcp.OutcomeSpotQueued+"\n"), text)
	require.Contains(t, text, "\nSession 4 sleeps in the spot queue with no wake armed.\n")
	require.Contains(t, text, "### Waiting to run\n\nit sleeps in the spot queue until the spot scheduler resumes it: number 2 in line")
	require.Contains(t, text, `"slot_wait":{"reason":"spot_queue","position":2`)

	b.fake.Answer("ListSessions", &lifecyclev1.ListSessionsResponse{Sessions: []*lifecyclev1.Session{
		{Id: 9, Status: "running", SchedulingClass: "priority",
			SlotWait: &lifecyclev1.SlotWait{Reason: "no_slot", Position: 1, Since: timestamppb.New(since)}},
		waiting,
	}, Pagination: &lifecyclev1.Pagination{Page: 1, PerPage: 25, TotalCount: 2, TotalPages: 1}}, nil)
	res = call(t, c, "quick_search_sessions", map[string]any{"view": "ranked"})
	require.False(t, res.IsError, textOf(res))
	require.True(t, proto.Equal(&lifecyclev1.ListSessionsRequest{View: "ranked"}, lastCall(t, b.fake).Request))
	text = textOf(res)
	require.Contains(t, text, "in the order they will run")
	require.Contains(t, text, "#9 [running]")
	require.Contains(t, text, "waits to run: no_slot, number 1 in line")
	require.Less(t, strings.Index(text, "#9 "), strings.Index(text, "#4 "), "in run order")
}
