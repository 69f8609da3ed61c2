// Package clients holds lifecycle's outbound adapters to other contexts.
package clients

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
)

// ConsumerDeliverer hands lifecycle events to a context that implements
// SessionEventConsumerService: the one delivery contract of every
// subscriber, lineage and the owners of effects alike. It reports the
// consumer's status as is; the relay classifies it (outbox.Relay).
type ConsumerDeliverer struct {
	Client lifecyclev1.SessionEventConsumerServiceClient
}

// Deliver implements outbox.DeliverFunc.
func (d ConsumerDeliverer) Deliver(ctx context.Context, m outbox.Message) error {
	evt, err := events.Decode(m.Payload)
	if err != nil {
		// No retry makes a stored payload decode.
		return outbox.Reject(err)
	}
	if _, err := d.Client.ConsumeSessionEvent(ctx, &lifecyclev1.ConsumeSessionEventRequest{Event: evt}); err != nil {
		return fmt.Errorf("deliver %s %s to %s: %w", m.Topic, m.ID, m.Subscriber, err)
	}
	return nil
}

// AlertWakeTimers keys the alert raised when the triggers' Wake workflows
// cannot be started.
const AlertWakeTimers = "start_wake_timers"

// FailureReporter escalates effects that keep failing, with the spec's
// split: an effect whose failure leaves state inconsistent that nothing
// reconciles raises an alert, deduplicated by the effect's name (a sick
// dependency fails the same effect for every session, and one page says
// so); any other effect's failure is only logged, which the relay does.
type FailureReporter struct {
	Alerts alert.Raiser
	// After is the number of failed attempts that makes an alert: the first
	// failures of a flaky hand-off retry quietly.
	After  int
	Logger *slog.Logger
}

// OnFailure implements outbox.Relay.OnFailure.
func (r FailureReporter) OnFailure(ctx context.Context, m outbox.Message, attempts int, derr error) {
	if attempts == r.After && (m.Topic == events.TopicTriggerArmed || m.Topic == events.TopicTriggerDue) {
		// A wake whose timer cannot be started is a wake that will not
		// fire: it pages, one page for the sick dependency (Temporal).
		alert.Raise(ctx, r.Alerts, r.Logger, AlertWakeTimers,
			fmt.Sprintf("the triggers' timers cannot be started (%d attempts): %v", attempts, derr),
			map[string]any{"topic": m.Topic, "event_id": m.ID, "attempts": attempts, "error": derr.Error()})
		return
	}
	if !strings.HasPrefix(m.Topic, events.TopicEffectPrefix) || attempts != r.After {
		// Alert once, when the threshold is crossed; later failures of the
		// same message are the relay's retries, already logged.
		return
	}
	evt, err := events.Decode(m.Payload)
	if err != nil || !evt.GetEffect().GetAlerting() {
		return
	}
	name := effect.Name(evt.GetEffect())
	alert.Raise(ctx, r.Alerts, r.Logger, name,
		fmt.Sprintf("side effect %s keeps failing (%d attempts): %v", name, attempts, derr),
		map[string]any{"session_id": evt.GetSessionId(), "event_id": m.ID, "attempts": attempts, "error": derr.Error()})
}
