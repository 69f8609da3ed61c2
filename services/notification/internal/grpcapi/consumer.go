package grpcapi

import (
	"context"
	"log/slog"
	"math"

	"github.com/google/uuid"
	"google.golang.org/grpc"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/wire"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// The lifecycle effects notification carries out (lifecycle's domain names
// them; notification is their owner).
const (
	EffectNeedsInputPush = "enqueue_debounced_needs_input_push_notification"
	EffectFailurePush    = "enqueue_failure_push_notification"
	EffectMarkStale      = "mark_notifications_stale"
	EffectDismiss        = "dismiss_notifications"
)

// Consumer implements lifecyclev1.SessionEventConsumerServiceServer for the
// effects lifecycle addresses to notification. It only records and
// signals, so a transition never waits on a sink: a pause signals the
// session's debounce; a failure creates its notification and starts its
// push; a resume stales and an archive dismisses the session's
// notifications. Delivery is at least once and each is idempotent (applied
// false for a redelivery it recognises). An effect it cannot read is
// InvalidArgument (lifecycle parks it dead and pages); one it does not own,
// or an event that is no effect, is answered applied false.
type Consumer struct {
	lifecyclev1.UnimplementedSessionEventConsumerServiceServer
	notifications app.Notifications
	errors        *Server // its toStatus
}

var _ lifecyclev1.SessionEventConsumerServiceServer = (*Consumer)(nil)

// NewConsumer returns the consumer over the use cases.
func NewConsumer(notifications app.Notifications, logger *slog.Logger) *Consumer {
	return &Consumer{notifications: notifications, errors: &Server{logger: logger}}
}

// Register adds the consumer to g.
func (c *Consumer) Register(g *grpc.Server) {
	lifecyclev1.RegisterSessionEventConsumerServiceServer(g, c)
}

// ConsumeSessionEvent implements lifecyclev1.SessionEventConsumerServiceServer.
func (c *Consumer) ConsumeSessionEvent(ctx context.Context, req *lifecyclev1.ConsumeSessionEventRequest) (*lifecyclev1.ConsumeSessionEventResponse, error) {
	applied, err := c.consume(ctx, req.GetEvent())
	if err != nil {
		return nil, c.errors.toStatus(ctx, err)
	}
	return &lifecyclev1.ConsumeSessionEventResponse{Applied: applied}, nil
}

func (c *Consumer) consume(ctx context.Context, e *lifecyclev1.SessionEvent) (bool, error) {
	effect := e.GetEffect()
	switch effect.GetName() {
	case EffectNeedsInputPush, EffectFailurePush, EffectMarkStale, EffectDismiss:
	default:
		return false, nil
	}
	id := e.GetSessionId()
	if id <= 0 {
		return false, validation.Invalid("event.session_id", "must be the session's positive id, got %d", id)
	}
	if _, err := uuid.Parse(e.GetEventId()); err != nil {
		return false, validation.Invalid("event.event_id", "must be the event's UUID, got %q", e.GetEventId())
	}
	payload := effect.GetPayload().AsMap()
	switch effect.GetName() {
	case EffectNeedsInputPush:
		marker, err := positiveCount(payload, "needs_input_count")
		if err != nil {
			return false, err
		}
		if e.GetOccurredAt() == nil {
			return false, validation.Invalid("event.occurred_at", "is required: the debounce counts from the pause")
		}
		return true, c.notifications.Paused.Handle(ctx, id, marker, e.GetOccurredAt().AsTime())
	case EffectFailurePush:
		s, err := snapshot(effect, id)
		if err != nil {
			return false, err
		}
		reason, _ := payload["failure_reason"].(string)
		if reason == "" {
			reason = effect.GetSession().GetFailureReason()
		}
		return c.notifications.Failure.Handle(ctx, e.GetEventId(), s, reason)
	case EffectMarkStale:
		s, err := snapshot(effect, id)
		if err != nil {
			return false, err
		}
		return c.notifications.Stale.Handle(ctx, e.GetEventId(), id, s.NeedsInputCount)
	default: // EffectDismiss
		if e.GetOccurredAt() == nil {
			return false, validation.Invalid("event.occurred_at", "is required: the archive dismisses what was created before it")
		}
		return c.notifications.Archived.Handle(ctx, e.GetEventId(), id, e.GetOccurredAt().AsTime())
	}
}

// snapshot is the session as the transition left it, which the effect
// carries.
func snapshot(effect *lifecyclev1.SessionEffect, id int64) (domain.Session, error) {
	s := effect.GetSession()
	switch {
	case s == nil:
		return domain.Session{}, validation.Invalid("event.effect.session", "is required: the session as the transition left it")
	case s.GetId() != id:
		return domain.Session{}, validation.Invalid("event.effect.session.id", "is %d but the event is about session %d", s.GetId(), id)
	}
	return wire.Session(s), nil
}

// positiveCount reads a positive whole number from an effect's payload
// (a JSON number: a float64).
func positiveCount(payload map[string]any, field string) (int64, error) {
	f, ok := payload[field].(float64)
	if !ok || f < 1 || f != math.Trunc(f) || f > math.MaxInt64 {
		return 0, validation.Invalid("event.effect.payload."+field, "must be a positive whole number, got %v", payload[field])
	}
	return int64(f), nil
}
