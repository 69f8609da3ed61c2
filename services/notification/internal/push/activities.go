package push

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/pager"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/platform/metrics"
)

// Activities are the push workflows' I/O: the app's use cases, and the
// push route's sinks.
type Activities struct {
	NeedsInput app.RecordNeedsInput
	Pushed     app.MarkPushed
	// Sinks are the push route's (NOTIFICATION_SINKS).
	Sinks []sink.Sink
}

// RecordNeedsInput ends the debounce of session's pause marker.
func (a *Activities) RecordNeedsInput(ctx context.Context, sessionID, marker int64) (app.NeedsInputOutcome, error) {
	return a.NeedsInput.Handle(ctx, sessionID, marker)
}

// pushLatency is how long a push took from the notification's creation to
// its first sink (PL-24; issue 21's push goal, with the debounce's timer).
var pushLatency = metrics.Seconds("zimmer.push.latency",
	"From a notification's creation (the debounce's end, or at once) to the first sink having its push.")

// MarkPushed records that notification id reached a sink.
func (a *Activities) MarkPushed(ctx context.Context, id int64) error {
	took, first, err := a.Pushed.Handle(ctx, id)
	if first {
		pushLatency.Record(ctx, took.Seconds())
	}
	return err
}

// Registry is where workflows and activities are registered: a worker, or
// the test suite's environment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register puts both workflows and their activities on r; the delivery
// activity is the pager's, over the push route's sinks.
func Register(r Registry, a *Activities) {
	r.RegisterWorkflowWithOptions(Push, workflow.RegisterOptions{Name: PushWorkflowName})
	r.RegisterWorkflowWithOptions(NeedsInputDebounce, workflow.RegisterOptions{Name: DebounceWorkflowName})
	r.RegisterActivityWithOptions(pager.Deliverer{Sinks: a.Sinks, Route: "push"}.Deliver, activity.RegisterOptions{Name: ActivityDeliverPush})
	r.RegisterActivityWithOptions(a.MarkPushed, activity.RegisterOptions{Name: ActivityMarkPushed})
	r.RegisterActivityWithOptions(a.RecordNeedsInput, activity.RegisterOptions{Name: ActivityRecordNeedsInput})
}
