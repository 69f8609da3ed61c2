package sweep_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	tw "go.temporal.io/sdk/workflow"
	"golang.org/x/sys/unix"

	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/process"
	"github.com/zimmerhq/zimmer/services/runner/internal/sweep"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// queryRequests is the stand-in's query for the requests it received.
const queryRequests = "requests"

// standInBusy marks, as the stand-in's State.Node, a workflow running a turn.
const standInBusy = "busy"

// standIn plays a session's workflow under its registered name: it answers
// turn_state (busy when started so) and keeps every turn request signalled
// to it.
func standIn(ctx tw.Context, st workflow.State) error {
	var got []workflow.TurnRequest
	if err := tw.SetQueryHandler(ctx, workflow.QueryTurnState, func() (workflow.TurnState, error) {
		return workflow.TurnState{InFlight: st.Node == standInBusy, Node: st.Node}, nil
	}); err != nil {
		return err
	}
	if err := tw.SetQueryHandler(ctx, queryRequests, func() ([]workflow.TurnRequest, error) { return got, nil }); err != nil {
		return err
	}
	ch := tw.GetSignalChannel(ctx, workflow.SignalTurn)
	for {
		var req workflow.TurnRequest
		ch.Receive(ctx, &req)
		got = append(got, req)
	}
}

func dialNamespace(t *testing.T) client.Client {
	t.Helper()
	addr := servicetest.TemporalAddress(t)
	namespace := servicetest.TemporalNamespace(t, addr)
	c, err := temporalx.Dial(t.Context(), addr, namespace, slogx.Discard())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// runSchedule triggers the schedule and returns its run's result.
func runSchedule(t *testing.T, c client.Client, id string, result any) {
	t.Helper()
	ctx := t.Context()
	handle := c.ScheduleClient().GetHandle(ctx, id)
	require.NoError(t, handle.Trigger(ctx, client.ScheduleTriggerOptions{}))
	var run client.ScheduleActionResult
	require.Eventually(t, func() bool {
		desc, err := handle.Describe(ctx)
		require.NoError(t, err)
		if len(desc.Info.RecentActions) == 0 {
			return false
		}
		run = desc.Info.RecentActions[0]
		return true
	}, servicetest.Timeout, 100*time.Millisecond, "the trigger started a run")
	require.NoError(t, c.GetWorkflow(ctx, run.StartWorkflowResult.WorkflowID, run.StartWorkflowResult.FirstExecutionRunID).Get(ctx, result))
}

func requestsOf(t *testing.T, c client.Client, id int64) []workflow.TurnRequest {
	t.Helper()
	v, err := c.QueryWorkflow(t.Context(), workflow.ID(id), "", queryRequests)
	require.NoError(t, err)
	var got []workflow.TurnRequest
	require.NoError(t, v.Get(&got))
	return got
}

// TestOrphanedSessionsScheduleOnTemporal runs runner-orphaned-sessions on
// the dev server: of the candidates, the one whose workflow runs a turn is
// left alone; the one with no workflow, and the one whose workflow was
// terminated mid-turn, get one started with the recover request; the one
// whose workflow is idle gets the request signalled — through the same
// Starter the event consumer uses.
func TestOrphanedSessionsScheduleOnTemporal(t *testing.T) {
	t.Parallel()
	c := dialNamespace(t)
	ctx, cancel := context.WithTimeout(t.Context(), servicetest.Timeout)
	defer cancel()

	w := worker.New(c, workflow.TaskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(standIn, tw.RegisterOptions{Name: workflow.WorkflowName})

	base := time.Now().UnixNano() / 1000
	busy, missing, idle, closed := base, base+1, base+2, base+3
	for id, node := range map[int64]string{busy: standInBusy, idle: "a", closed: standInBusy} {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflow.ID(id), TaskQueue: workflow.TaskQueue},
			workflow.WorkflowName, workflow.State{Session: workflow.SessionSpec{ID: id}, Node: node})
		require.NoError(t, err)
	}
	// Closed by an operator while its turn ran: it runs nothing now.
	require.NoError(t, c.TerminateWorkflow(ctx, workflow.ID(closed), "", "operator"))
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	lc := &fakeLifecycle{candidates: []sweep.Candidate{
		{SessionID: busy, Status: "running", RunningJobID: "job-busy", UpdatedAt: at},
		{SessionID: missing, Status: "running", RunningJobID: "job-missing", UpdatedAt: at},
		{SessionID: idle, Status: "needs_input", PausedBy: "recovery", UpdatedAt: at},
		{SessionID: closed, Status: "running", RunningJobID: "job-closed", UpdatedAt: at},
	}}
	o := sweep.OrphanedSessions{Lifecycle: lc, Workflows: sweep.TemporalWorkflows{Client: c},
		Turns: workflow.Starter{Client: c, Node: "n1"}, Logger: slogx.Discard()}
	const grace = 2 * time.Minute
	require.NoError(t, sweep.SetupOrphanedSessions(ctx, c, w, "runner", o, grace, time.Hour))
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	desc, err := c.ScheduleClient().GetHandle(ctx, sweep.OrphanedSessionsScheduleID).Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, time.Hour, desc.Schedule.Spec.Intervals[0].Every)

	var got periodic.SweepResult
	start := time.Now()
	runSchedule(t, c, sweep.OrphanedSessionsScheduleID, &got)
	require.EqualValues(t, 3, got.Done, "three sessions were handed their recovery")
	require.WithinDuration(t, start.Add(-grace), got.Cutoff, 30*time.Second, "settled for the grace")
	require.Len(t, lc.asked, 1)

	require.Empty(t, requestsOf(t, c, busy))
	recover := func(id int64, requestID string) []workflow.TurnRequest {
		return []workflow.TurnRequest{{RequestID: requestID, Kind: workflow.KindRecover, Path: domain.PathOrphanSweep,
			Session: workflow.SessionSpec{ID: id}}}
	}
	require.Equal(t, recover(missing, "recover/orphan/job-missing"), requestsOf(t, c, missing))
	require.Equal(t, recover(idle, fmt.Sprintf("recover/orphan/%d/%d", idle, at.Unix())), requestsOf(t, c, idle))
	require.Equal(t, recover(closed, "recover/orphan/job-closed"), requestsOf(t, c, closed), "a new run")
	for _, id := range []int64{busy, missing, idle, closed} {
		_ = c.TerminateWorkflow(context.Background(), workflow.ID(id), "", "test over")
	}
}

// TestZombieReaperScheduleRunsOnTheNodeQueue: runner-zombie-reaper-<node>
// runs its pass on the node's own task queue.
func TestZombieReaperScheduleRunsOnTheNodeQueue(t *testing.T) {
	t.Parallel()
	c := dialNamespace(t)
	ctx, cancel := context.WithTimeout(t.Context(), servicetest.Timeout)
	defer cancel()
	const node = "n1"
	w := worker.New(c, workflow.NodeTaskQueue(node), worker.Options{})
	passes := make(chan struct{}, 10)
	z := sweep.ZombieReaper{Logger: slogx.Discard(), Reap: func() ([]process.Reaped, error) {
		passes <- struct{}{}
		return []process.Reaped{{Pid: 100, Status: unix.WaitStatus(0)}, {Pid: 101}}, nil
	}}
	require.NoError(t, sweep.SetupZombieReaper(ctx, c, w, node, z, 5*time.Minute))
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	id := sweep.ZombieReaperScheduleID(node)
	require.Equal(t, "runner-zombie-reaper-n1", id)
	desc, err := c.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
	require.NoError(t, err)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, "zimmer-runner-n1", action.TaskQueue)
	require.Equal(t, 5*time.Minute, desc.Schedule.Spec.Intervals[0].Every)

	var reaped int
	runSchedule(t, c, id, &reaped)
	require.Equal(t, 2, reaped)
	require.Len(t, passes, 1)
}
