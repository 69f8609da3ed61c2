package service_test

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/runner/internal/config"
	"github.com/zimmerhq/zimmer/services/runner/internal/process"
	"github.com/zimmerhq/zimmer/services/runner/internal/service"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
	"github.com/zimmerhq/zimmer/services/runner/internal/sweep"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// TestNodeKillsWhatItsPreviousIncarnationLeftAndSchedulesItsSweeps: an
// agent recorded by the node's previous incarnation (a runner killed -9
// leaves it, in its own group, ignoring SIGTERM) is SIGKILLed while the
// node is made, before it can serve its queue, and its turn gets an ending
// on the transcript saying it was cut off and by what; the node ensures
// runner-orphaned-sessions and its runner-zombie-reaper-<node> with the
// configured intervals.
func TestNodeKillsWhatItsPreviousIncarnationLeftAndSchedulesItsSweeps(t *testing.T) {
	t.Parallel()
	temporalAddr := servicetest.TemporalAddress(t)
	namespace := servicetest.TemporalNamespace(t, temporalAddr)
	lifecycleAddr := serve(t, func(s *grpc.Server) {
		lifecyclev1.RegisterLifecycleServiceServer(s, lifecyclev1.UnimplementedLifecycleServiceServer{})
	})
	nodeName := fmt.Sprintf("sweeps-%d", time.Now().UnixNano())
	cfg, err := config.Load(t.Context(), servicetest.Getenv(map[string]string{
		"RUNNER_NODE":                  nodeName,
		"RUNNER_WORKSPACES_DIR":        t.TempDir(),
		"RUNNER_LIFECYCLE_ADDR":        lifecycleAddr,
		"RUNNER_QUEUE_ADDR":            "none",
		"RUNNER_LINEAGE_ADDR":          "none",
		"RUNNER_MCP_URL":               "http://127.0.0.1:1/mcp",
		"RUNNER_DEMO_AGENT_PATH":       "/bin/true",
		"RUNNER_DEFAULT_RUNTIME":       "demo",
		"RUNNER_ORPHAN_SWEEP_INTERVAL": "7m",
		"RUNNER_ORPHAN_GRACE":          "3m",
		"RUNNER_ZOMBIE_REAP_INTERVAL":  "11m",
	}))
	require.NoError(t, err)
	cfg.Config = servicetest.Config(t, service.MigrationSets...)
	cfg.TemporalAddress, cfg.TemporalNamespace = temporalAddr, namespace

	// The previous incarnation's agent, recorded where the node records.
	agent, err := process.Start(process.Command{Path: "sh", Args: []string{"sh", "-c", `trap "" TERM; exec sleep 60`}},
		process.Options{RecordDir: service.ProcessRecordDir(cfg), Labels: map[string]string{"turn": "lost", "session": "7"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-agent.Pid(), syscall.SIGKILL) })
	records, err := os.ReadDir(service.ProcessRecordDir(cfg))
	require.NoError(t, err)
	require.Len(t, records, 1)

	svc := servicetest.New(t, service.NewNode, cfg)
	// Made, not yet run: the kill is already done.
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	exit, err := agent.Wait(ctx)
	require.NoError(t, err, "the agent is dead once the node is made")
	require.Equal(t, syscall.SIGKILL, exit.Signal)
	records, err = os.ReadDir(service.ProcessRecordDir(cfg))
	require.NoError(t, err)
	require.Empty(t, records)
	page, err := store.NewTranscripts(svc.Pool, transcript.DefaultLimits).Page(t.Context(), transcript.Query{SessionID: 7, TurnID: "lost"})
	require.NoError(t, err)
	require.Len(t, page.Turns, 1, "the lost turn has a transcript")
	require.Contains(t, page.Turns[0].Outcome, "cut off")
	require.Contains(t, page.Turns[0].Outcome, "SIGKILL")
	require.Len(t, page.Lines, 1)
	require.Equal(t, service.CutOffType, page.Lines[0].Type)
	require.Contains(t, page.Lines[0].Text, fmt.Sprintf("the runner on node %q died while this turn ran", nodeName))
	require.Contains(t, page.Lines[0].Text, fmt.Sprintf("SIGKILL to pid %d", agent.Pid()))

	schedule := func(id string) *client.ScheduleWorkflowAction {
		desc, err := svc.Temporal.ScheduleClient().GetHandle(t.Context(), id).Describe(t.Context())
		require.NoError(t, err, id)
		action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
		require.True(t, ok)
		return action
	}
	orphans := schedule(sweep.OrphanedSessionsScheduleID)
	require.Equal(t, periodic.SweepWorkflowName(service.Name, "orphaned-sessions"), orphans.Workflow)
	require.Equal(t, rw.TaskQueue, orphans.TaskQueue)
	zombies := schedule(sweep.ZombieReaperScheduleID(nodeName))
	require.Equal(t, rw.NodeTaskQueue(nodeName), zombies.TaskQueue)
	desc, err := svc.Temporal.ScheduleClient().GetHandle(t.Context(), sweep.ZombieReaperScheduleID(nodeName)).Describe(t.Context())
	require.NoError(t, err)
	require.Equal(t, 11*time.Minute, desc.Schedule.Spec.Intervals[0].Every)
	desc, err = svc.Temporal.ScheduleClient().GetHandle(t.Context(), sweep.OrphanedSessionsScheduleID).Describe(t.Context())
	require.NoError(t, err)
	require.Equal(t, 7*time.Minute, desc.Schedule.Spec.Intervals[0].Every)
}
