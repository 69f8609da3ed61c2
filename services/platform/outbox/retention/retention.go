// Package retention deletes a producing service's delivered outbox
// messages once they are older than its retention. A Temporal Schedule,
// <service>-outbox-retention, runs the prune on the service's own task
// queue, so operators see it, trigger it and pause it in the Web UI like
// every other sweep; the outbox itself then holds only what is in flight
// and what is dead.
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

	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// Registered names: the same on every service's task queue.
const (
	WorkflowName = "zimmer.outbox.Prune"
	ActivityName = "zimmer.outbox.PruneDelivered"
)

// maxInterval is how often the prune runs at most; a shorter retention
// runs it once per retention, so nothing outlives its retention by more
// than one interval.
const maxInterval = time.Hour

// ScheduleID names a service's retention schedule (and its workflows,
// which Temporal suffixes with the scheduled time).
func ScheduleID(service string) string { return service + "-outbox-retention" }

// Input is what the schedule passes to each run.
type Input struct {
	Retention time.Duration
}

// Result is what one run did.
type Result struct {
	Cutoff  time.Time
	Deleted int64
}

// Workflow deletes the messages delivered before now minus the retention.
// The cutoff is read from the workflow's clock, so the history records it
// and a replay computes the same one.
func Workflow(ctx workflow.Context, in Input) (Result, error) {
	if in.Retention <= 0 {
		return Result{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("outbox retention must be positive, got %s", in.Retention), "InvalidRetention", nil)
	}
	cutoff := workflow.Now(ctx).Add(-in.Retention)
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
	if err := workflow.ExecuteActivity(ctx, ActivityName, cutoff).Get(ctx, &deleted); err != nil {
		return Result{}, fmt.Errorf("prune outbox messages delivered before %s: %w", cutoff.Format(time.RFC3339), err)
	}
	workflow.GetLogger(ctx).Info("pruned delivered outbox messages", "cutoff", cutoff, "deleted", deleted)
	return Result{Cutoff: cutoff, Deleted: deleted}, nil
}

// Activities prune one service's database.
type Activities struct {
	DB pgdb.DBTX
}

// PruneDelivered deletes the messages delivered before cutoff
// (outbox.PruneDelivered): never an undelivered or dead one.
func (a Activities) PruneDelivered(ctx context.Context, cutoff time.Time) (int64, error) {
	return outbox.PruneDelivered(ctx, a.DB, cutoff)
}

// Register registers the workflow and its activity on a service's worker.
func Register(w worker.Registry, db pgdb.DBTX) {
	w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(Activities{DB: db}.PruneDelivered, activity.RegisterOptions{Name: ActivityName})
}

// Schedule creates or updates service's retention schedule: the workflow
// on the service's task queue every retention, at most every hour.
func Schedule(ctx context.Context, c client.Client, service string, retention time.Duration) error {
	if retention <= 0 {
		return fmt.Errorf("outbox retention must be positive, got %s", retention)
	}
	return temporalx.EnsureSchedule(ctx, c, client.ScheduleOptions{
		ID:   ScheduleID(service),
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: min(retention, maxInterval)}}},
		Action: &client.ScheduleWorkflowAction{
			ID:        ScheduleID(service),
			Workflow:  WorkflowName,
			Args:      []any{Input{Retention: retention}},
			TaskQueue: temporalx.TaskQueue(service),
			// A run no worker picks up (the service is gone) gives way
			// instead of blocking the schedule for ever.
			WorkflowExecutionTimeout: maxInterval,
		},
	})
}

// Setup is what a producing service that runs a worker calls once at
// start-up: register the prune on w and ensure its schedule.
func Setup(ctx context.Context, c client.Client, w worker.Registry, db pgdb.DBTX, service string, retention time.Duration) error {
	Register(w, db)
	return Schedule(ctx, c, service, retention)
}
