// Package wake is the triggers' clock: one Temporal workflow per trigger,
// zimmer.lifecycle.Wake (id session/<session>/wake/<trigger>, task queue
// zimmer-lifecycle), which sleeps until the trigger's time and then fires
// it through the FireTrigger activity, retried until it succeeds. The
// trigger's row in lifecycle's database is the truth: the workflow is
// started from the outbox event its arming committed (Starter.Deliver, the
// "triggers" subscriber's in-process delivery), and a timer that fires
// into a trigger no longer armed does nothing.
package wake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/platform/metrics"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// Names in Temporal.
const (
	WorkflowName         = "zimmer.lifecycle.Wake"
	ActivityFireTrigger  = "zimmer.lifecycle.FireTrigger"
	fireStartToClose     = 30 * time.Second
	fireInitialInterval  = time.Second
	fireMaximumInterval  = time.Minute
	fireBackoff          = 2
	startTimeoutPerEvent = 5 * time.Second
)

// WorkflowID names a trigger's workflow.
func WorkflowID(sessionID, triggerID int64) string {
	return domain.Trigger{ID: triggerID, SessionID: sessionID}.WorkflowID()
}

// Input starts a trigger's workflow.
type Input struct {
	TriggerID int64
	SessionID int64
	// FireAt is when it fires; a watcher that is due fires at once.
	FireAt time.Time
}

// Outcome is what the firing did: "delivered", "queued", "cancelled" (the
// session could not be woken) or "nothing" (no longer armed).
type Outcome string

// The outcomes.
const (
	OutcomeDelivered Outcome = "delivered"
	OutcomeQueued    Outcome = "queued"
	OutcomeCancelled Outcome = "cancelled"
	OutcomeNothing   Outcome = "nothing"
)

// Workflow sleeps until in.FireAt by the workflow's clock, then fires the
// trigger. The activity is retried with backoff until it succeeds: a wake
// must fire, and one that is early by the activity's clock is retried, not
// delivered.
func Workflow(ctx workflow.Context, in Input) (Outcome, error) {
	if wait := in.FireAt.Sub(workflow.Now(ctx)); wait > 0 {
		if err := workflow.Sleep(ctx, wait); err != nil {
			return "", err
		}
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: fireStartToClose,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: fireInitialInterval, BackoffCoefficient: fireBackoff,
			MaximumInterval: fireMaximumInterval, MaximumAttempts: 0, // until it succeeds
		},
	})
	var out Outcome
	if err := workflow.ExecuteActivity(actx, ActivityFireTrigger, in).Get(ctx, &out); err != nil {
		return "", err
	}
	return out, nil
}

// Firer fires a trigger (app.FireTrigger).
type Firer interface {
	Handle(ctx context.Context, sessionID, triggerID int64) (app.Fired, error)
}

// Activities are the workflow's I/O.
type Activities struct{ Fire Firer }

// ActivityRegistry is a worker, or the test suite's environment.
type ActivityRegistry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers the activity under its name.
func (a *Activities) Register(r ActivityRegistry) {
	r.RegisterActivityWithOptions(a.FireTrigger, activity.RegisterOptions{Name: ActivityFireTrigger})
}

// lateness is how long after its time a trigger fired, by outcome (PL-24):
// the no-early-wake invariant says it is never negative, and issue 21's
// goal is its p99.
var lateness = metrics.Seconds("zimmer.wake.lateness", "How long after its time a wake-up or a due watcher fired.")

// FireTrigger fires the trigger: an error is retried.
func (a *Activities) FireTrigger(ctx context.Context, in Input) (Outcome, error) {
	f, err := a.Fire.Handle(ctx, in.SessionID, in.TriggerID)
	if err != nil {
		return "", err
	}
	outcome := OutcomeDelivered
	switch {
	case f.Step == domain.FireCancel:
		outcome = OutcomeCancelled
	case f.Step == domain.FireNothing:
		outcome = OutcomeNothing
	case f.Queued:
		outcome = OutcomeQueued
	}
	lateness.Record(ctx, time.Since(in.FireAt).Seconds(), metric.WithAttributes(attribute.String("outcome", string(outcome))))
	return outcome, nil
}

// WorkflowStarter is the Temporal client's ExecuteWorkflow.
type WorkflowStarter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// Starter starts triggers' workflows from lifecycle's outbox events.
type Starter struct {
	Client    WorkflowStarter
	TaskQueue string
}

// Install registers the workflow and the activity on w (before it starts)
// and returns the Starter whose Deliver is the "triggers" subscriber's.
func Install(c client.Client, w worker.Worker, service string, fire Firer) (*Starter, error) {
	if c == nil || w == nil || fire == nil {
		return nil, errors.New("install the wake workflow: a Temporal client, a worker and a firer are required")
	}
	w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	(&Activities{Fire: fire}).Register(w)
	return &Starter{Client: c, TaskQueue: temporalx.TaskQueue(service)}, nil
}

// Deliver implements outbox.DeliverFunc for the "triggers" subscriber:
// lifecycle.trigger_armed (a one-time trigger: fire at its time) and
// lifecycle.trigger_due (a watcher that fired: at once) start the
// trigger's workflow. Idempotent: the workflow id is the trigger's, and a
// start of one that runs or ran is a no-op, so a redelivery (a crash
// between the start and the acknowledgement) starts nothing more.
func (s *Starter) Deliver(ctx context.Context, m outbox.Message) error {
	if m.Topic != events.TopicTriggerArmed && m.Topic != events.TopicTriggerDue {
		return outbox.Reject(fmt.Errorf("the triggers' timers take %s and %s, not %s", events.TopicTriggerArmed, events.TopicTriggerDue, m.Topic))
	}
	t, err := events.DecodeTrigger(m.Payload)
	if err != nil {
		return outbox.Reject(err)
	}
	in := Input{TriggerID: t.GetId(), SessionID: t.GetSessionId(), FireAt: t.GetFireAt().AsTime()}
	if in.TriggerID <= 0 || in.SessionID <= 0 || t.GetFireAt() == nil {
		return outbox.Reject(fmt.Errorf("trigger event %s names no trigger, session or time", m.ID))
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeoutPerEvent)
	defer cancel()
	_, err = s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        WorkflowID(in.SessionID, in.TriggerID),
		TaskQueue: s.TaskQueue,
		// One workflow per trigger, ever: a second start is a no-op.
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowExecutionErrorWhenAlreadyStarted: false,
		Memo:                                     map[string]any{"session_id": in.SessionID, "trigger_id": in.TriggerID},
	}, WorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start %s for %s: %w", WorkflowName, WorkflowID(in.SessionID, in.TriggerID), err)
	}
	return nil
}
