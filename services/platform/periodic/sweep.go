package periodic

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

// Sweep is a job that acts, each run, on what has been left longer than a
// window: deletes delivered outbox messages, archives stale sessions,
// nudges resting ones. Its workflow takes its cutoff from its own clock,
// so the history records it and a replay computes the same one.
type Sweep struct {
	// Name names the sweep in kebab-case ("stale-sessions"): its schedule
	// is <service>-<name>, its workflow type zimmer.<service>.<Name> in
	// PascalCase (StaleSessions) and its activity that with "Before".
	Name string
	// Window is how long a thing is left alone: each run acts on what is
	// older than its start time minus Window.
	Window time.Duration
	// Every is how often the sweep runs; by default every Window, at most
	// every hour.
	Every time.Duration
	// Did says what Run does to a thing ("deleted", "nudged"), for the log
	// line of a run that did something.
	Did string
	// Run acts on what is older than cutoff (never on anything still in
	// use) and says on how many things it did.
	Run func(ctx context.Context, cutoff time.Time) (int64, error)
}

// maxEvery is how often a sweep runs at most by default, and how long one
// run may take before the next replaces it.
const maxEvery = time.Hour

// SweepInput is what the schedule passes to each run.
type SweepInput struct {
	Sweep    string
	Activity string
	Window   time.Duration
	Did      string
}

// SweepResult is what one run did.
type SweepResult struct {
	Cutoff time.Time
	// Done counts the things the run acted on.
	Done int64
}

// SweepWorkflowName and SweepActivityName are the names service registers
// the sweep named name under.
func SweepWorkflowName(service, name string) string { return TypeName(service, pascal(name)) }

// SweepActivityName: see SweepWorkflowName.
func SweepActivityName(service, name string) string {
	return SweepWorkflowName(service, name) + "Before"
}

// SweepWorkflow runs one sweep. A run that acted on nothing — most runs of
// a minutely sweep — logs at debug only, so the console shows what the
// sweeps did rather than that they ran.
func SweepWorkflow(ctx workflow.Context, in SweepInput) (SweepResult, error) {
	if in.Window <= 0 {
		return SweepResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the window of sweep %s must be positive, got %s", in.Sweep, in.Window), "InvalidWindow", nil)
	}
	cutoff := workflow.Now(ctx).Add(-in.Window)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    10,
		},
	})
	var done int64
	if err := workflow.ExecuteActivity(ctx, in.Activity, cutoff).Get(ctx, &done); err != nil {
		return SweepResult{}, fmt.Errorf("sweep %s before %s: %w", in.Sweep, cutoff.Format(time.RFC3339), err)
	}
	log := workflow.GetLogger(ctx).Debug
	if done > 0 {
		log = workflow.GetLogger(ctx).Info
	}
	log("swept", "sweep", in.Sweep, "cutoff", cutoff, "did", in.Did, "count", done)
	return SweepResult{Cutoff: cutoff, Done: done}, nil
}

// RegisterSweep registers s's workflow and activity on service's worker w.
func RegisterSweep(w worker.Registry, service string, s Sweep) {
	w.RegisterWorkflowWithOptions(SweepWorkflow, workflow.RegisterOptions{Name: SweepWorkflowName(service, s.Name)})
	w.RegisterActivityWithOptions(s.Run, activity.RegisterOptions{Name: SweepActivityName(service, s.Name)})
}

// EnsureSweep is Ensure for s on service's task queue.
func EnsureSweep(ctx context.Context, c client.Client, service string, s Sweep) error {
	if s.Window <= 0 {
		return fmt.Errorf("the window of sweep %s must be positive, got %s", s.Name, s.Window)
	}
	every := s.Every
	if every <= 0 {
		every = min(s.Window, maxEvery)
	}
	return Ensure(ctx, c, Job{
		Service: service, Name: s.Name, Workflow: SweepWorkflowName(service, s.Name),
		Args:      []any{SweepInput{Sweep: s.Name, Activity: SweepActivityName(service, s.Name), Window: s.Window, Did: s.Did}},
		TaskQueue: temporalx.TaskQueue(service), Every: every, RunTimeout: maxEvery,
	})
}

// SetupSweep is what a service that runs a worker calls once at start-up
// for each of its sweeps: register it on w and ensure its schedule.
func SetupSweep(ctx context.Context, c client.Client, w worker.Registry, service string, s Sweep) error {
	RegisterSweep(w, service, s)
	return EnsureSweep(ctx, c, service, s)
}

// pascal turns a kebab-case name into PascalCase: stale-sessions →
// StaleSessions.
func pascal(kebab string) string {
	var b []byte
	upper := true
	for i := range len(kebab) {
		ch := kebab[i]
		switch {
		case ch == '-':
			upper = true
			continue
		case upper && 'a' <= ch && ch <= 'z':
			ch -= 'a' - 'A'
		}
		upper = false
		b = append(b, ch)
	}
	return string(b)
}
