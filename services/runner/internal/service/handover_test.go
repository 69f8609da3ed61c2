package service_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// The hand-over on the real Temporal dev server with the demo agent: the
// queue hands two messages over at the first two turns' clean exits, then
// has nothing; the three turns' processes run one after another under the
// jobs the queue named, saying their prompts, and the session pauses once,
// at the end, never between them.
func TestQueuedMessagesAreHandedOverAsTurnsWithoutAPause(t *testing.T) {
	t.Parallel()
	id := newSessionID()
	first := fmt.Sprintf("session-%d/turn-1", id)
	next := map[string]*queuev1.DeliverNextMessageResponse{
		first:      {Delivered: true, JobId: "queue/m1", Prompt: "@demo say the second message"},
		"queue/m1": {Delivered: true, JobId: "queue/m2", Prompt: "@demo say the third message"},
	}
	n := startNode(t, func(from string) *queuev1.DeliverNextMessageResponse { return next[from] })
	n.create(t, id, "@demo say the first prompt")

	require.Eventually(t, func() bool { return n.lifecycle.count(id, rw.EventPause) > 0 },
		60*time.Second, 20*time.Millisecond, "the session never paused")
	time.Sleep(500 * time.Millisecond) // anything more would show now
	require.Equal(t, []string{rw.EventStart, rw.EventPause}, n.lifecycle.events(id), "one start, one pause, nothing between")
	require.Equal(t, []string{first, "queue/m1", "queue/m2"}, n.queue.askedAfter(), "each clean exit drained once")

	transcripts := runnerv1.NewRunnerServiceClient(servicetest.DialOperator(t, n.svc.Addr()))
	resp, err := transcripts.GetTranscript(t.Context(), &runnerv1.GetTranscriptRequest{SessionId: fmt.Sprint(id), PageSize: 1000})
	require.NoError(t, err)
	turns := resp.GetTurns() // newest first
	require.Len(t, turns, 3)
	require.Equal(t, []string{"queue/m2", "queue/m1", first}, []string{turns[0].GetTurnId(), turns[1].GetTurnId(), turns[2].GetTurnId()})
	for i := 2; i > 0; i-- {
		require.Equal(t, "exit status 0", turns[i].GetOutcome())
		require.False(t, turns[i-1].GetStartedAt().AsTime().Before(turns[i].GetEndedAt().AsTime()),
			"turn %s started after %s ended", turns[i-1].GetTurnId(), turns[i].GetTurnId())
	}
	said := map[string][]string{}
	for _, l := range resp.GetLines() {
		if l.GetKind() == string(agent.KindAssistant) {
			said[l.GetTurnId()] = append(said[l.GetTurnId()], l.GetText())
		}
	}
	require.Equal(t, map[string][]string{
		first:      {"the first prompt"},
		"queue/m1": {"the second message"},
		"queue/m2": {"the third message"},
	}, said, "each turn ran its own prompt")
}

// The turn's path on the real dev server, counted in its history: lifecycle
// transitions run as local activities inside the workflow task that asks
// for them (docs/temporal.md), so a first turn waits for two workflow tasks
// and two activity dispatches (PrepareWorkspace, RunTurn) before its
// process starts, and its clean exit for one workflow task before the
// pause: the revocation of the turn's credentials, the drain and the
// transitions are never scheduled as activities of their own.
func TestATurnsTransitionsCostNoDispatch(t *testing.T) {
	t.Parallel()
	id := newSessionID()
	n := startNode(t, func(string) *queuev1.DeliverNextMessageResponse { return nil })
	n.create(t, id, "@demo say one turn")
	require.Eventually(t, func() bool { return n.lifecycle.count(id, rw.EventPause) > 0 },
		60*time.Second, 20*time.Millisecond, "the session never paused")
	require.Equal(t, []string{rw.EventStart, rw.EventPause}, n.lifecycle.events(id))

	var path []string
	it := n.svc.Temporal.GetWorkflowHistory(t.Context(), rw.ID(id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			path = append(path, "workflow task")
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			path = append(path, e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if e.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity" {
				path = append(path, "local")
			}
		}
	}
	var dispatched []string
	for _, step := range path {
		if step != "local" {
			dispatched = append(dispatched, step)
		}
	}
	require.Equal(t, []string{
		"workflow task", rw.ActivityPrepareWorkspace,
		"workflow task", rw.ActivityRunTurn,
		"workflow task", // the exit: the credentials' revocation, the drain and the pause run inside it
	}, dispatched, "the dispatches on the turn's path (whole history: %v)", path)
}
