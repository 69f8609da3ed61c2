package grpcapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect"
	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/wire"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Consumer implements lifecyclev1.SessionEventConsumerServiceServer for the
// effects lifecycle addresses to notification. It only records and
// signals, so a transition never waits on a sink: a pause signals the
// session's debounce; a failure creates its notification and starts its
// push; a resume stales and an archive dismisses the session's
// notifications. Delivery is at least once and each is idempotent (applied
// false for a redelivery it recognises). An effect it cannot read is
// InvalidArgument (lifecycle parks it dead and pages); one it does not own
// is answered applied false by effect.Unhandled, and an event that is no
// effect applied false without a word.
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
	eff := e.GetEffect()
	if eff == nil {
		return false, nil // no effect: not notification's to apply
	}
	switch eff.GetKind().(type) {
	case *lifecyclev1.SessionEffect_NeedsInputPush, *lifecyclev1.SessionEffect_FailurePush,
		*lifecyclev1.SessionEffect_MarkNotificationsStale, *lifecyclev1.SessionEffect_DismissNotifications:
	default:
		return effect.Unhandled(ctx, c.errors.logger, e, "not notification's").GetApplied(), nil
	}
	id := e.GetSessionId()
	if id <= 0 {
		return false, validation.Invalid("event.session_id", "must be the session's positive id, got %d", id)
	}
	if _, err := uuid.Parse(e.GetEventId()); err != nil {
		return false, validation.Invalid("event.event_id", "must be the event's UUID, got %q", e.GetEventId())
	}
	switch kind := eff.GetKind().(type) {
	case *lifecyclev1.SessionEffect_NeedsInputPush:
		marker := kind.NeedsInputPush.GetNeedsInputCount()
		if marker < 1 {
			return false, validation.Invalid("event.effect.needs_input_push.needs_input_count", "must be a positive whole number, got %d", marker)
		}
		if e.GetOccurredAt() == nil {
			return false, validation.Invalid("event.occurred_at", "is required: the debounce counts from the pause")
		}
		s, err := snapshot(eff, id)
		if err != nil {
			return false, err
		}
		skipped, err := c.notifications.Paused.Handle(ctx, s, marker, e.GetOccurredAt().AsTime())
		if skipped != "" {
			c.errors.logger.DebugContext(ctx, "a pause that earns no push starts no debounce", "session_id", id, "why", skipped)
		}
		return skipped == "" && err == nil, err
	case *lifecyclev1.SessionEffect_FailurePush:
		s, err := snapshot(eff, id)
		if err != nil {
			return false, err
		}
		reason := kind.FailurePush.GetFailureReason()
		if reason == "" {
			reason = eff.GetSession().GetFailureReason()
		}
		var occurred time.Time // none: when the notification is created
		if e.GetOccurredAt() != nil {
			occurred = e.GetOccurredAt().AsTime()
		}
		return c.notifications.Failure.Handle(ctx, e.GetEventId(), occurred, s, reason)
	case *lifecyclev1.SessionEffect_MarkNotificationsStale:
		s, err := snapshot(eff, id)
		if err != nil {
			return false, err
		}
		if e.GetOccurredAt() == nil {
			return false, validation.Invalid("event.occurred_at", "is required: the resume stales what happened before it")
		}
		return c.notifications.Stale.Handle(ctx, e.GetEventId(), id, s.NeedsInputCount, e.GetOccurredAt().AsTime())
	default: // DismissNotifications
		if e.GetOccurredAt() == nil {
			return false, validation.Invalid("event.occurred_at", "is required: the archive dismisses what was created before it")
		}
		return c.notifications.Archived.Handle(ctx, e.GetEventId(), id, e.GetOccurredAt().AsTime())
	}
}

// snapshot is the session as the transition left it, which the effect
// carries.
func snapshot(eff *lifecyclev1.SessionEffect, id int64) (domain.Session, error) {
	s := eff.GetSession()
	switch {
	case s == nil:
		return domain.Session{}, validation.Invalid("event.effect.session", "is required: the session as the transition left it")
	case s.GetId() != id:
		return domain.Session{}, validation.Invalid("event.effect.session.id", "is %d but the event is about session %d", s.GetId(), id)
	}
	return wire.Session(s), nil
}
