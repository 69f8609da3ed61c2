// Package retention deletes what a service no longer needs to keep — its
// delivered outbox messages, old transcripts — once it is older than a
// window. Each kind of data is a Policy, run as a periodic.Sweep named
// <policy>-retention: the schedule <service>-<policy>-retention runs the
// workflow zimmer.<service>.<Policy>Retention on the service's own task
// queue.
package retention

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/zimmerhq/zimmer/services/platform/periodic"
)

// Policy is one kind of data a service prunes.
type Policy struct {
	// Name names the data ("outbox", "transcripts"); its sweep is
	// <name>-retention.
	Name string
	// Keep is how long the data stays; the prune runs every Keep, at most
	// every hour, so nothing outlives Keep by more than one interval.
	Keep time.Duration
	// Prune deletes what is older than cutoff (never anything still in
	// use) and reports how much it deleted.
	Prune func(ctx context.Context, cutoff time.Time) (int64, error)
}

// Sweep is p as a periodic sweep.
func (p Policy) Sweep() periodic.Sweep {
	return periodic.Sweep{Name: sweepName(p.Name), Window: p.Keep, Did: "deleted", Run: p.Prune}
}

func sweepName(policy string) string { return policy + "-retention" }

// ScheduleID names a service's schedule for a policy:
// <service>-<policy>-retention.
func ScheduleID(service, policy string) string {
	return periodic.ScheduleID(service, sweepName(policy))
}

// WorkflowName and ActivityName are the names a policy's workflow and
// activity are registered under on the service's worker:
// zimmer.<service>.<Policy>Retention(Before).
func WorkflowName(service, policy string) string {
	return periodic.SweepWorkflowName(service, sweepName(policy))
}

// ActivityName: see WorkflowName.
func ActivityName(service, policy string) string {
	return periodic.SweepActivityName(service, sweepName(policy))
}

// Schedule creates or updates service's schedule for p.
func Schedule(ctx context.Context, c client.Client, service string, p Policy) error {
	return periodic.EnsureSweep(ctx, c, service, p.Sweep())
}

// Setup is what a service that runs a worker calls once at start-up for
// each policy: register its prune on w and ensure its schedule.
func Setup(ctx context.Context, c client.Client, w worker.Registry, service string, p Policy) error {
	return periodic.SetupSweep(ctx, c, w, service, p.Sweep())
}
