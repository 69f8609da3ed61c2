package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	tw "go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/runner/internal/process"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// runner is the service's name in its schedules' names.
const runner = "runner"

// orphanedSessions names the orphan sweep (periodic.Sweep).
const orphanedSessions = "orphaned-sessions"

// OrphanedSessionsScheduleID names the orphan sweep's schedule (one for
// all nodes: each node's start ensures it, and any node runs it).
var OrphanedSessionsScheduleID = periodic.ScheduleID(runner, orphanedSessions)

// ZombieReaperScheduleID names node's zombie reaper schedule.
func ZombieReaperScheduleID(node string) string {
	return periodic.ScheduleID(runner, zombieReaper(node))
}

// zombieReaper names node's zombie reaper job.
func zombieReaper(node string) string { return "zombie-reaper-" + node }

// Names the zombie reaper's workflow and activity are registered under, on
// each node's own worker: the workflow is named for the job (as the clone
// TrashReaper is), the activity for what it does (as ReapClone is).
const (
	ZombieReaperWorkflow = "zimmer.runner.ZombieReaper"
	ActivityReapZombies  = "zimmer.runner.ReapZombies"
)

// SetupOrphanedSessions registers the orphan sweep on the runner's shared
// worker and ensures its schedule: every every, the candidates settled for
// grace (a turn that just began or ended is not taken for lost).
func SetupOrphanedSessions(ctx context.Context, c client.Client, shared worker.Registry, service string,
	o OrphanedSessions, grace, every time.Duration,
) error {
	// A sweep, as lifecycle's are: a schedule of a workflow whose cutoff
	// is its own clock minus a window.
	return periodic.SetupSweep(ctx, c, shared, service, periodic.Sweep{
		Name: orphanedSessions, Window: grace, Every: every, Did: "recovered", Run: o.RecoverSettledBefore,
	})
}

// ZombieReaper is the zombie reaper's activity.
type ZombieReaper struct {
	// Reap runs one pass (process.ReapZombies).
	Reap func() ([]process.Reaped, error)
	// Tell, when set, says each zombie reaped on its session's timeline.
	Tell   func(context.Context, process.Reaped)
	Logger *slog.Logger
}

// ReapZombies runs one pass and says how many zombies it reaped.
func (z ZombieReaper) ReapZombies(ctx context.Context) (int, error) {
	reaped, err := z.Reap()
	for _, r := range reaped {
		z.logger().InfoContext(ctx, "reaped a zombie no one was waiting for",
			"pid", r.Pid, "exit_status", r.Status.ExitStatus(), "signal", r.Status.Signal().String())
		if z.Tell != nil {
			z.Tell(ctx, r)
		}
	}
	if err != nil {
		return len(reaped), fmt.Errorf("reap zombies: %w", err)
	}
	return len(reaped), nil
}

func (z ZombieReaper) logger() *slog.Logger {
	if z.Logger == nil {
		return slog.Default()
	}
	return z.Logger
}

// ReapZombiesOnce is the zombie reaper's workflow: it runs the activity
// once, on the workflow's own task queue: the node's, whose zombies are
// its own.
func ReapZombiesOnce(ctx tw.Context) (int, error) {
	ctx = tw.WithActivityOptions(ctx, tw.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var n int
	err := tw.ExecuteActivity(ctx, ActivityReapZombies).Get(ctx, &n)
	return n, err
}

// SetupZombieReaper registers the zombie reaper on node's own worker and
// ensures its schedule runs there every every.
func SetupZombieReaper(ctx context.Context, c client.Client, nodeWorker worker.Registry, node string,
	z ZombieReaper, every time.Duration,
) error {
	nodeWorker.RegisterWorkflowWithOptions(ReapZombiesOnce, tw.RegisterOptions{Name: ZombieReaperWorkflow})
	nodeWorker.RegisterActivityWithOptions(z.ReapZombies, activity.RegisterOptions{Name: ActivityReapZombies})
	return periodic.Ensure(ctx, c, periodic.Job{
		Service: runner, Name: zombieReaper(node), Workflow: ZombieReaperWorkflow, TaskQueue: workflow.NodeTaskQueue(node),
		// A run of a node that is gone gives way to the next one.
		Every: every, RunTimeout: max(every, time.Minute),
	})
}

// WorkflowClient is what TemporalWorkflows needs of the Temporal client.
type WorkflowClient interface {
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
}

// TemporalWorkflows is Workflows over Temporal.
type TemporalWorkflows struct{ Client WorkflowClient }

// TurnState implements Workflows: the turn_state query of the session's
// running workflow. A closed one (terminated by an operator, say) counts
// as none: it runs nothing, whatever it held when it closed, and the
// recover request starts a new run.
func (t TemporalWorkflows) TurnState(ctx context.Context, sessionID int64) (workflow.TurnState, bool, error) {
	id := workflow.ID(sessionID)
	desc, err := t.Client.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return workflow.TurnState{}, false, nil
	case err != nil:
		return workflow.TurnState{}, false, err
	case desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return workflow.TurnState{}, false, nil
	}
	v, err := t.Client.QueryWorkflow(ctx, id, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), workflow.QueryTurnState)
	if err != nil {
		return workflow.TurnState{}, false, err
	}
	var st workflow.TurnState
	if err := v.Get(&st); err != nil {
		return workflow.TurnState{}, false, fmt.Errorf("read the turn state of session %d: %w", sessionID, err)
	}
	return st, true, nil
}
