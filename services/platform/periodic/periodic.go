// Package periodic runs a service's recurring work as Temporal Schedules:
// a Job starts a workflow every interval, and a Sweep is the common job
// that acts on whatever has been left longer than a window (retention is
// one kind of sweep; the heartbeat nudge, the orphan recovery and the
// re-drive are others). Every schedule is named <service>-<name> and its
// workflow type zimmer.<service>.<Name>, so an operator finds each one in
// the Web UI under its service, and sees, triggers and pauses them all
// alike.
package periodic

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// TypeName is the name a service registers a workflow or an activity
// under: zimmer.<service>.<name>, name in PascalCase.
func TypeName(service, name string) string { return "zimmer." + service + "." + name }

// ScheduleID names service's schedule for the job named name (kebab-case):
// <service>-<name>. Temporal names each run after it, suffixed with the
// scheduled time.
func ScheduleID(service, name string) string { return service + "-" + name }

// Job is a workflow a service starts every interval.
type Job struct {
	// Service owns the job: its schedule is ScheduleID(Service, Name).
	Service string
	// Name names the job, in kebab-case ("trash-reaper").
	Name string
	// Workflow is the type of the workflow each run starts, registered by
	// the service (TypeName).
	Workflow string
	Args     []any
	// TaskQueue is the queue of the worker that runs the workflow.
	TaskQueue string
	// Every is the cadence; it must be positive.
	Every time.Duration
	// RunTimeout bounds one run: a run no worker takes (its service or
	// node is gone) gives way to the next instead of blocking the schedule
	// for ever.
	RunTimeout time.Duration
}

// Ensure creates j's schedule, or, when it exists (another replica, or an
// earlier start), makes its spec, action and policies what j says, so a
// changed configuration takes effect on the next start. Replicas starting
// at once are fine: each either creates the schedule or updates it to the
// same. The schedule's state is left alone: an operator's pause in the Web
// UI survives restarts.
func Ensure(ctx context.Context, c client.Client, j Job) error {
	if j.Every <= 0 {
		return fmt.Errorf("the interval of %s's %s must be positive, got %s", j.Service, j.Name, j.Every)
	}
	id := ScheduleID(j.Service, j.Name)
	return ensureSchedule(ctx, c, client.ScheduleOptions{
		ID:   id,
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: j.Every}}},
		Action: &client.ScheduleWorkflowAction{
			ID: id, Workflow: j.Workflow, Args: j.Args, TaskQueue: j.TaskQueue,
			WorkflowExecutionTimeout: j.RunTimeout,
		},
	})
}

// ensureSchedule creates opts's schedule or overwrites the spec, action and
// policies of the one that exists. The SDK updates without a conflict
// token, so concurrent updates do not fail: the last one wins, and every
// replica writes the same.
//
// A call the server did not answer in time (replicas creating the same
// schedule at once on a busy server) is asked again until ctx ends: a
// service's start should not fail on what a second try settles.
func ensureSchedule(ctx context.Context, c client.Client, opts client.ScheduleOptions) error {
	for {
		err := ensureScheduleOnce(ctx, c, opts)
		if err == nil || ctx.Err() != nil || !unanswered(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// unanswered reports whether err is a call that timed out or found the
// server unavailable, which a retry may settle.
func unanswered(err error) bool {
	var deadline *serviceerror.DeadlineExceeded
	var unavailable *serviceerror.Unavailable
	return errors.As(err, &deadline) || errors.As(err, &unavailable) || errors.Is(err, context.DeadlineExceeded)
}

func ensureScheduleOnce(ctx context.Context, c client.Client, opts client.ScheduleOptions) error {
	_, err := c.ScheduleClient().Create(ctx, opts)
	if err == nil {
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", opts.ID, err)
	}
	update := client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec = &opts.Spec
			s.Action = opts.Action
			s.Policy = &client.SchedulePolicies{
				Overlap:        opts.Overlap,
				CatchupWindow:  opts.CatchupWindow,
				PauseOnFailure: opts.PauseOnFailure,
			}
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	}
	if err := c.ScheduleClient().GetHandle(ctx, opts.ID).Update(ctx, update); err != nil {
		return fmt.Errorf("update schedule %s: %w", opts.ID, err)
	}
	return nil
}
