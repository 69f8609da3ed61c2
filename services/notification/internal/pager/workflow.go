package pager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
)

// Names under which the page workflow and its activity are registered.
const (
	WorkflowName = "zimmer.notification.PageAlert"
	ActivityName = "zimmer.notification.DeliverAlert"
)

// permanentFailure is the application error type of a sink refusal that
// retrying cannot fix; Temporal does not retry it.
const permanentFailure = "PermanentSinkFailure"

// RetryPolicy bounds how long one sink is retried: backoff from 1 s to
// 5 min, 20 attempts (about an hour), then the page is given up on for that
// sink and the workflow fails naming it, visible in the Temporal Web UI.
var RetryPolicy = &temporal.RetryPolicy{
	InitialInterval:        time.Second,
	BackoffCoefficient:     2,
	MaximumInterval:        5 * time.Minute,
	MaximumAttempts:        20,
	NonRetryableErrorTypes: []string{permanentFailure},
}

// Page is the page workflow's input: the alert's message and the sinks of
// the alert route when it opened (fixed at start, so a replay is
// deterministic).
type Page struct {
	AlertID int64
	Sinks   []string
	Message sink.Message
}

// WorkflowID names the page workflow of alert id, so one alert pages once.
func WorkflowID(alertID int64) string { return fmt.Sprintf("alert/%d", alertID) }

// PageAlert delivers the page to every sink at once, each its own activity
// retried with backoff, so a failing sink neither delays nor stops the
// others. It fails, naming them, when any sink gave up.
func PageAlert(ctx workflow.Context, p Page) error {
	return DeliverToSinks(ctx, ActivityName, p.Sinks, p.Message, nil)
}

// DeliverToSinks runs activity (a Deliverer's Deliver, registered under
// that name) for every sink at once under RetryPolicy, so a failing sink
// neither delays nor stops the others; alerts and pushes both deliver
// through it. delivered, when not nil, is called as each sink accepts m,
// in the order they do. err names each sink that gave up.
func DeliverToSinks(ctx workflow.Context, activity string, sinks []string, m sink.Message, delivered func(sink string)) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// Above the sinks' own NOTIFICATION_SINK_TIMEOUT (default 10 s).
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         RetryPolicy,
	})
	failed := make([]error, len(sinks))
	sel := workflow.NewSelector(ctx)
	for i, name := range sinks {
		sel.AddFuture(workflow.ExecuteActivity(actx, activity, name, m), func(f workflow.Future) {
			if err := f.Get(ctx, nil); err != nil {
				failed[i] = fmt.Errorf("sink %s: %w", name, err)
				return
			}
			if delivered != nil {
				delivered(name)
			}
		})
	}
	for range sinks {
		sel.Select(ctx)
	}
	return errors.Join(failed...)
}

// Deliverer is the delivery activity: it sends a message through one of
// a route's sinks, by name.
type Deliverer struct {
	Sinks []sink.Sink
	// Route names the route in errors ("push"); "" is the alert route.
	Route string
}

// Deliver sends m through the sink named name. A permanent failure (or a
// sink this worker does not have) is non-retryable; anything else is
// returned as is for Temporal to retry.
func (d Deliverer) Deliver(ctx context.Context, name string, m sink.Message) error {
	for _, s := range d.Sinks {
		if s.Name() != name {
			continue
		}
		err := s.Send(ctx, m)
		if err == nil {
			return nil
		}
		if !sink.Retryable(err) {
			return temporal.NewNonRetryableApplicationError(err.Error(), permanentFailure, err)
		}
		return err
	}
	route := d.Route
	if route == "" {
		route = "alert"
	}
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("sink %q is not on this worker's %s route", name, route), permanentFailure, nil)
}

// Register puts the page workflow and its activity, delivering through
// sinks, on w.
func Register(w worker.Registry, sinks []sink.Sink) {
	w.RegisterWorkflowWithOptions(PageAlert, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(Deliverer{Sinks: sinks}.Deliver, activity.RegisterOptions{Name: ActivityName})
}
