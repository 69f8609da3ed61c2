// Package retention deletes what a service no longer needs to keep — its
// delivered outbox messages, old transcripts — once it is older than a
// window. Each kind of data is a Policy; a Temporal Schedule per service
// and policy, <service>-<policy>-retention, runs the prune on the service's
// own task queue, so operators see, trigger and pause every such sweep in
// the Web UI like the others.
package retention

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// Policy is one kind of data a service prunes.
type Policy struct {
	// Name names the data ("outbox", "transcripts"): the schedule, the
	// workflow and the activity are named after it.
	Name string
	// ScheduleID, when set, names the schedule (and its runs) instead of
	// ScheduleID(service, Name): for a sweep that is not about keeping
	// data, such as the queue's queue-stale-seals.
	ScheduleID string
	// Keep is how long the data stays; the prune runs every Keep, at most
	// every hour, so nothing outlives Keep by more than one interval.
	Keep time.Duration
	// Every, when set, is how often the prune runs instead: for a sweep
	// whose cadence is not its window (a 5-minute sweep of hour-old rows).
	Every time.Duration
	// Prune deletes what is older than cutoff (never anything still in
	// use) and reports how much it deleted.
	Prune func(ctx context.Context, cutoff time.Time) (int64, error)
}

// maxInterval is how often a prune runs at most.
const maxInterval = time.Hour

// ScheduleID names a service's schedule for a policy (and its workflows,
// which Temporal suffixes with the scheduled time).
func ScheduleID(service, policy string) string { return service + "-" + policy + "-retention" }

// WorkflowName and ActivityName are the names a policy's workflow and
// activity are registered under on the service's worker.
func WorkflowName(policy string) string { return "zimmer." + policy + ".Prune" }

// ActivityName: see WorkflowName.
func ActivityName(policy string) string { return "zimmer." + policy + ".PruneBefore" }

// Input is what the schedule passes to each run.
type Input struct {
	Policy string
	Keep   time.Duration
}

// Result is what one run did.
type Result struct {
	Cutoff  time.Time
	Deleted int64
}

// Workflow deletes what is older than now minus the policy's window. The
// cutoff is read from the workflow's clock, so the history records it and
// a replay computes the same one.
func Workflow(ctx workflow.Context, in Input) (Result, error) {
	if in.Keep <= 0 {
		return Result{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s retention must be positive, got %s", in.Policy, in.Keep), "InvalidRetention", nil)
	}
	cutoff := workflow.Now(ctx).Add(-in.Keep)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    10,
		},
	})
	var deleted int64
	if err := workflow.ExecuteActivity(ctx, ActivityName(in.Policy), cutoff).Get(ctx, &deleted); err != nil {
		return Result{}, fmt.Errorf("prune %s older than %s: %w", in.Policy, cutoff.Format(time.RFC3339), err)
	}
	workflow.GetLogger(ctx).Info("pruned", "policy", in.Policy, "cutoff", cutoff, "deleted", deleted)
	return Result{Cutoff: cutoff, Deleted: deleted}, nil
}

// Register registers p's workflow and activity on a service's worker.
func Register(w worker.Registry, p Policy) {
	w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName(p.Name)})
	w.RegisterActivityWithOptions(p.Prune, activity.RegisterOptions{Name: ActivityName(p.Name)})
}

// Schedule creates or updates service's schedule for p: its workflow on the
// service's task queue every p.Keep, at most every hour.
func Schedule(ctx context.Context, c client.Client, service string, p Policy) error {
	if p.Keep <= 0 {
		return fmt.Errorf("%s retention must be positive, got %s", p.Name, p.Keep)
	}
	id := p.ScheduleID
	if id == "" {
		id = ScheduleID(service, p.Name)
	}
	every := p.Every
	if every <= 0 {
		every = min(p.Keep, maxInterval)
	}
	return temporalx.EnsureEvery(ctx, c, temporalx.Every{
		ID: id, Workflow: WorkflowName(p.Name), Args: []any{Input{Policy: p.Name, Keep: p.Keep}},
		TaskQueue: temporalx.TaskQueue(service), Interval: every, RunTimeout: maxInterval,
	})
}

// Setup is what a service that runs a worker calls once at start-up for
// each policy: register its prune on w and ensure its schedule.
func Setup(ctx context.Context, c client.Client, w worker.Registry, service string, p Policy) error {
	Register(w, p)
	return Schedule(ctx, c, service, p)
}
