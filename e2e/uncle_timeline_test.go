package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// TestUncleEdgeOutcomesOnBothTimelines records uncle edges through
// lineage's gRPC API, the only way a caller reaches RecordUncleEdge until
// the follow-up and queue paths call it, and reads both sessions'
// timelines over REST: an edge written and a seniority inversion each put
// their sentence, naming the entry point that caused it, on both; an
// outcome that changes nothing puts none on either.
func TestUncleEdgeOutcomesOnBothTimelines(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	ctx := context.Background()
	// Uncle edges are recorded by the queue and interrupt paths: internal.
	// Every line names the caller (issue 10's audit).
	lineage := lineagev1.NewLineageServiceClient(s.dial("lineage", s.asService("queue")))
	const byQueue = " (by the queue)"

	senior := createREST(t, api, `{"prompt":"route","git_root":"g","title":"Router"}`)
	junior := createREST(t, api, `{"prompt":"work","git_root":"g","title":"Worker"}`)
	other := createREST(t, api, `{"prompt":"review","git_root":"g","title":"Reviewer"}`)

	record := func(acting, target int64, entryPoint string) lineagev1.UncleEdgeOutcome {
		t.Helper()
		var out lineagev1.UncleEdgeOutcome
		require.Eventually(t, func() bool { // both nodes must have reached lineage
			resp, err := lineage.RecordUncleEdge(ctx, &lineagev1.RecordUncleEdgeRequest{
				ActingSessionId: acting, TargetSessionId: target, EntryPoint: entryPoint,
			})
			if err != nil {
				return false
			}
			out = resp.GetOutcome()
			return out != lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_UNKNOWN_SESSION
		}, 20*time.Second, 100*time.Millisecond)
		return out
	}
	// lineageLines are the session's timeline notes lineage wrote.
	lineageLines := func(id int64) []string {
		var out []string
		for _, m := range timeline(t, api, id, "note") {
			if strings.HasPrefix(m, "[Lineage]") {
				out = append(out, m)
			}
		}
		return out
	}
	waitLines := func(id int64, n int) []string {
		t.Helper()
		var got []string
		require.Eventually(t, func() bool {
			got = lineageLines(id)
			return len(got) >= n
		}, 20*time.Second, 100*time.Millisecond, "session %d's timeline never got %d lineage lines: %q", id, n, got)
		require.Len(t, got, n, "session %d", id)
		return got
	}

	// Written: senior queued junior. One line, the same on both ends,
	// naming both by #id and the source (issue 23 rule 19).
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, record(senior, junior, "mcp.action_session.follow_up"))
	written := fmt.Sprintf("[Lineage] Uncle edge recorded: session #%d is now an uncle of session #%d "+
		"(session #%d queued or interrupted session #%d via mcp.action_session.follow_up)"+byQueue, senior, junior, senior, junior)
	require.Equal(t, []string{written}, waitLines(senior, 1))
	require.Equal(t, []string{written}, waitLines(junior, 1))

	// Inverted: junior interrupted senior back; the line names the old edge
	// and the new.
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_INVERTED, record(junior, senior, "rest.enqueued_messages.interrupt"))
	inverted := fmt.Sprintf("[Lineage] Uncle edge inverted: #%d → #%d replaced by #%d → #%d "+
		"(session #%d queued or interrupted session #%d via rest.enqueued_messages.interrupt, so it is now the senior)"+byQueue,
		senior, junior, junior, senior, junior, senior)
	require.Equal(t, inverted, waitLines(senior, 2)[1])
	require.Equal(t, inverted, waitLines(junior, 2)[1])

	// Nothing: the edge is already recorded, and a session messaging
	// itself says nothing about lineage. Lineage delivers in order, so once
	// a later change's lines arrive, any line these had made would have.
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_ALREADY_REACHABLE, record(junior, senior, "rest.follow_up"))
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_SELF, record(senior, senior, "rest.follow_up"))
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, record(other, junior, "mcp.manage_enqueued_messages.send_now"))
	waitLines(other, 1)
	require.Len(t, waitLines(junior, 3), 3)
	require.Contains(t, lineageLines(junior)[2], fmt.Sprintf("session #%d is now an uncle of session #%d", other, junior))
	require.Len(t, lineageLines(senior), 2, "the outcomes that changed nothing wrote nothing")
}
