// Package clients holds lifecycle's outbound adapters to other contexts.
package clients

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
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

// AlertRaiser pages an operator, deduplicating by key.
type AlertRaiser interface {
	RaiseAlert(ctx context.Context, dedupKey, summary string, details map[string]any) error
}

// FailureReporter escalates effects that keep failing, with the spec's
// split: an effect whose failure leaves state inconsistent that nothing
// reconciles raises an alert, deduplicated by the effect's name (a sick
// dependency fails the same effect for every session, and one page says
// so); any other effect's failure is only logged, which the relay does.
type FailureReporter struct {
	Alerts AlertRaiser
	// After is the number of failed attempts that makes an alert: the first
	// failures of a flaky hand-off retry quietly.
	After  int
	Logger *slog.Logger
}

// OnFailure implements outbox.Relay.OnFailure.
func (r FailureReporter) OnFailure(ctx context.Context, m outbox.Message, attempts int, derr error) {
	if !strings.HasPrefix(m.Topic, events.TopicEffectPrefix) || attempts != r.After {
		// Alert once, when the threshold is crossed; later failures of the
		// same message are the relay's retries, already logged.
		return
	}
	evt, err := events.Decode(m.Payload)
	if err != nil || !evt.GetEffect().GetAlerting() {
		return
	}
	name := evt.GetEffect().GetName()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = r.Alerts.RaiseAlert(ctx, name,
		fmt.Sprintf("side effect %s keeps failing (%d attempts): %v", name, attempts, derr),
		map[string]any{"session_id": evt.GetSessionId(), "event_id": m.ID, "attempts": attempts, "error": derr.Error()})
	if err != nil {
		r.Logger.ErrorContext(ctx, "could not raise alert for a failing side effect",
			"effect", name, "session_id", evt.GetSessionId(), "alert_error", err, "error", derr)
	}
}

// OnDead implements outbox.Relay.OnDead: a message parked as dead always
// pages, whatever its topic, since nothing will retry it. The key names the
// subscriber and the topic, so a consumer that refuses a whole kind of
// event is one page, counted by notification, not one per session.
func (r FailureReporter) OnDead(ctx context.Context, m outbox.Message, derr error) {
	key := "outbox_dead_letter/" + m.Subscriber + "/" + m.Topic
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := r.Alerts.RaiseAlert(ctx, key,
		fmt.Sprintf("lifecycle event %s for %s was parked as dead after %d attempts: %v", m.Topic, m.Subscriber, m.Attempts+1, derr),
		map[string]any{"subscriber": m.Subscriber, "topic": m.Topic, "event_id": m.ID, "session_id": m.AggregateKey, "attempts": m.Attempts + 1, "error": derr.Error()})
	if err != nil {
		r.Logger.ErrorContext(ctx, "could not raise alert for a dead outbox message",
			"subscriber", m.Subscriber, "topic", m.Topic, "event_id", m.ID, "alert_error", err, "error", derr)
	}
}

// LogAlerts "raises" an alert by logging it at error level: the fallback
// when no notification service is configured.
type LogAlerts struct{ Logger *slog.Logger }

// RaiseAlert implements AlertRaiser.
func (l LogAlerts) RaiseAlert(ctx context.Context, key, summary string, details map[string]any) error {
	l.Logger.ErrorContext(ctx, summary, "alert", true, "dedup_key", key, "details", details)
	return nil
}

// NotificationAlerts raises alerts through the notification context, which
// deduplicates them by key within its window.
type NotificationAlerts struct {
	Client notificationv1.NotificationServiceClient
}

// RaiseAlert implements AlertRaiser.
func (n NotificationAlerts) RaiseAlert(ctx context.Context, key, summary string, details map[string]any) error {
	d, err := structpb.NewStruct(details)
	if err != nil {
		return fmt.Errorf("encode alert details: %w", err)
	}
	_, err = n.Client.RaiseAlert(ctx, &notificationv1.RaiseAlertRequest{DedupKey: key, Summary: summary, Details: d})
	return err
}
