package workflow_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// TestRecordTheReplayedRun records testdata/session_handover.json, the
// history TestRecordedRunsReplay replays, on the Temporal dev server with
// every activity faked: a first turn whose clean exit the queue hands
// queue/m1 over at, which then pauses, and a restart's turn, which pauses
// too. It runs only when asked (ZIMMER_RECORD_HISTORIES=1): a recorded
// history pins the workflow's commands as they were, so it is recorded
// again only when a change of them is meant and no run of the old shape
// is left to strand (docs/temporal.md, "Version gates").
func TestRecordTheReplayedRun(t *testing.T) {
	t.Parallel()
	if os.Getenv("ZIMMER_RECORD_HISTORIES") != "1" {
		t.Skip("records testdata/session_handover.json: set ZIMMER_RECORD_HISTORIES=1")
	}
	addr := servicetest.TemporalAddress(t)
	namespace := servicetest.TemporalNamespace(t, addr)
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: namespace})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	const node = "node-a"
	var (
		mu         sync.Mutex
		events     []string
		handedOver bool
	)
	shared := worker.New(c, rw.TaskQueue, worker.Options{})
	shared.RegisterWorkflowWithOptions(rw.Session, workflow.RegisterOptions{Name: rw.WorkflowName})
	shared.RegisterActivityWithOptions(func(_ context.Context, req rw.TransitionRequest) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, req.Event)
		return nil
	}, activity.RegisterOptions{Name: rw.ActivityTransition})
	shared.RegisterActivityWithOptions(func(context.Context, rw.ChooseAccountRequest) (domain.Choice, error) {
		return domain.Choice{Run: true, Account: domain.AmbientAccount}, nil
	}, activity.RegisterOptions{Name: rw.ActivityChooseAccount})
	shared.RegisterActivityWithOptions(func(context.Context, rw.TurnCredentialsRequest) error { return nil },
		activity.RegisterOptions{Name: rw.ActivityRevokeTurnCredentials})
	shared.RegisterActivityWithOptions(func(_ context.Context, req rw.DrainRequest) (rw.HandOver, error) {
		if req.FromJobID == "session-7/turn-1" {
			mu.Lock()
			defer mu.Unlock()
			handedOver = true
			return rw.HandOver{Delivered: true, JobID: "queue/m1", Prompt: "next"}, nil
		}
		return rw.HandOver{}, nil
	}, activity.RegisterOptions{Name: rw.ActivityDrain})
	clones := worker.New(c, rw.ClonesTaskQueue, worker.Options{})
	clones.RegisterActivityWithOptions(func(context.Context, rw.PrepareRequest) (rw.Workspace, error) {
		return rw.Workspace{Node: node, Workdir: "/clones/7", StateDir: "/state/7"}, nil
	}, activity.RegisterOptions{Name: rw.ActivityPrepareWorkspace})
	nodeWorker := worker.New(c, rw.NodeTaskQueue(node), worker.Options{})
	nodeWorker.RegisterActivityWithOptions(func(context.Context, rw.RunTurnRequest) (rw.TurnResult, error) {
		return exited(0), nil
	}, activity.RegisterOptions{Name: rw.ActivityRunTurn})
	for _, w := range []worker.Worker{shared, clones, nodeWorker} {
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
	}

	starter := rw.Starter{Client: c, Node: node}
	pauses := func(n int) {
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			count := 0
			for _, e := range events {
				if e == rw.EventPause {
					count++
				}
			}
			return count == n
		}, time.Minute, 50*time.Millisecond)
	}
	require.NoError(t, starter.Send(t.Context(), first("work")))
	pauses(1)
	require.NoError(t, starter.Send(t.Context(), rw.TurnRequest{RequestID: "restart-1", Kind: rw.KindResume, JobID: "resume/1", Session: spec}))
	pauses(2)
	mu.Lock()
	require.True(t, handedOver, "the recorded run hands queue/m1 over at the first turn's end")
	mu.Unlock()

	hist := &historypb.History{}
	it := c.GetWorkflowHistory(t.Context(), rw.ID(sessionID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		hist.Events = append(hist.Events, e)
	}
	require.NoError(t, c.TerminateWorkflow(t.Context(), rw.ID(sessionID), "", "recorded"))
	out, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(hist)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile("testdata/session_handover.json", append(out, '\n'), 0o644))
}
