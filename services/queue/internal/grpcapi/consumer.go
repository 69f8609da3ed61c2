package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/queue/internal/app"
)

// Consumer implements lifecyclev1.SessionEventConsumerServiceServer for
// the effects lifecycle addresses to the queue: a pause's drain (poke the
// session's drain workflow, where there is something to drain), an
// archive's retirement and an unarchive's
// reopening. Delivery is at least once and each is idempotent. An effect
// the queue cannot read is InvalidArgument (lifecycle parks it dead and
// pages); one it does not own is answered applied false by
// effect.Unhandled.
type Consumer struct {
	lifecyclev1.UnimplementedSessionEventConsumerServiceServer
	queue  app.Queue
	server *Server
	logger *slog.Logger
}

var _ lifecyclev1.SessionEventConsumerServiceServer = (*Consumer)(nil)

// NewConsumer returns the consumer over the use cases. Without Temporal
// (queue built with no Drains) a pause that needs the drain is answered
// unavailable, so lifecycle keeps it until a queue with Temporal takes it.
func NewConsumer(queue app.Queue, logger *slog.Logger) *Consumer {
	return &Consumer{queue: queue, server: NewServer(queue, logger), logger: logger}
}

// Register adds the consumer to g.
func (c *Consumer) Register(g *grpc.Server) {
	lifecyclev1.RegisterSessionEventConsumerServiceServer(g, c)
}

// ConsumeSessionEvent implements lifecyclev1.SessionEventConsumerServiceServer.
func (c *Consumer) ConsumeSessionEvent(ctx context.Context, req *lifecyclev1.ConsumeSessionEventRequest) (*lifecyclev1.ConsumeSessionEventResponse, error) {
	e := req.GetEvent()
	eff := e.GetEffect()
	if eff == nil {
		return &lifecyclev1.ConsumeSessionEventResponse{}, nil
	}
	id := e.GetSessionId()
	if id <= 0 {
		return nil, c.server.toStatus(ctx, validation.Invalid("event.session_id", "must be the session's positive id"))
	}
	var err error
	switch kind := eff.GetKind().(type) {
	case *lifecyclev1.SessionEffect_Drain:
		if _, err = c.queue.AfterPause.Handle(ctx, id, kind.Drain.GetStatusAfter()); errors.Is(err, app.ErrNoDrain) {
			// Lifecycle keeps the effect for a queue that runs the drain.
			err = fmt.Errorf("%w: %w", errUnavailable, err)
		}
	case *lifecyclev1.SessionEffect_RetireMessages:
		var at time.Time
		if at, err = effectTime(kind.RetireMessages.GetArchivedAt(), "event.effect.retire_messages.archived_at"); err == nil {
			err = c.queue.Retire.Handle(ctx, id, kind.RetireMessages.GetForced(), at, kind.RetireMessages.GetAttemptId())
		}
	case *lifecyclev1.SessionEffect_ReopenMessages:
		var at time.Time
		if at, err = effectTime(kind.ReopenMessages.GetUnarchivedAt(), "event.effect.reopen_messages.unarchived_at"); err == nil {
			err = c.queue.Reopen.Handle(ctx, id, at)
		}
	default:
		return effect.Unhandled(ctx, c.logger, e, "not the queue's"), nil
	}
	if err != nil {
		return nil, c.server.toStatus(ctx, err)
	}
	return &lifecyclev1.ConsumeSessionEventResponse{Applied: true}, nil
}

// effectTime reads a time an effect must carry.
func effectTime(ts *timestamppb.Timestamp, field string) (time.Time, error) {
	if ts == nil {
		return time.Time{}, validation.Invalid(field, "is required")
	}
	if err := ts.CheckValid(); err != nil {
		return time.Time{}, validation.Invalid(field, "must be a valid time: %v", err)
	}
	return ts.AsTime(), nil
}
