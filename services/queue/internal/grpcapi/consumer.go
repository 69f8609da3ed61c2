package grpcapi

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/queue/internal/app"
)

// The lifecycle effects the queue carries out (lifecycle's domain names
// them; the queue is their owner).
const (
	EffectDrain  = "drain_enqueued_messages_after_pause"
	EffectRetire = "retire_enqueued_messages"
	EffectReopen = "reopen_enqueued_messages"
)

// Consumer implements lifecyclev1.SessionEventConsumerServiceServer for
// the effects lifecycle addresses to the queue: a pause's drain (poke the
// session's drain workflow), an archive's retirement and an unarchive's
// reopening. Delivery is at least once and each is idempotent. An effect
// the queue cannot read is InvalidArgument (lifecycle parks it dead and
// pages); one it does not own is answered applied false.
type Consumer struct {
	lifecyclev1.UnimplementedSessionEventConsumerServiceServer
	queue  app.Queue
	drains app.Drains
	server *Server
}

var _ lifecyclev1.SessionEventConsumerServiceServer = (*Consumer)(nil)

// NewConsumer returns the consumer over the use cases; drains is the
// after-pause drain (nil without Temporal: the effect is answered
// unavailable, so lifecycle keeps it until a queue with Temporal takes it).
func NewConsumer(queue app.Queue, drains app.Drains, logger *slog.Logger) *Consumer {
	return &Consumer{queue: queue, drains: drains, server: NewServer(queue, logger)}
}

// Register adds the consumer to g.
func (c *Consumer) Register(g *grpc.Server) {
	lifecyclev1.RegisterSessionEventConsumerServiceServer(g, c)
}

// ConsumeSessionEvent implements lifecyclev1.SessionEventConsumerServiceServer.
func (c *Consumer) ConsumeSessionEvent(ctx context.Context, req *lifecyclev1.ConsumeSessionEventRequest) (*lifecyclev1.ConsumeSessionEventResponse, error) {
	e := req.GetEvent()
	effect := e.GetEffect()
	if effect == nil {
		return &lifecyclev1.ConsumeSessionEventResponse{}, nil
	}
	id := e.GetSessionId()
	if id <= 0 {
		return nil, c.server.toStatus(ctx, validation.Invalid("event.session_id", "must be the session's positive id"))
	}
	payload := effect.GetPayload().AsMap()
	var err error
	switch effect.GetName() {
	case EffectDrain:
		if c.drains == nil {
			return nil, c.server.toStatus(ctx, fmt.Errorf("%w: this queue runs no drain (no Temporal)", errUnavailable))
		}
		err = c.drains.Poke(ctx, id)
	case EffectRetire:
		var at time.Time
		if at, err = stampField(payload, "archived_at"); err == nil {
			forced, _ := payload["forced"].(bool)
			err = c.queue.Retire.Handle(ctx, id, forced, at)
		}
	case EffectReopen:
		var at time.Time
		if at, err = stampField(payload, "unarchived_at"); err == nil {
			err = c.queue.Reopen.Handle(ctx, id, at)
		}
	default:
		return &lifecyclev1.ConsumeSessionEventResponse{}, nil
	}
	if err != nil {
		return nil, c.server.toStatus(ctx, err)
	}
	return &lifecyclev1.ConsumeSessionEventResponse{Applied: true}, nil
}

// stampField reads an RFC 3339 time from an effect's payload.
func stampField(payload map[string]any, field string) (time.Time, error) {
	s, _ := payload[field].(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, validation.Invalid("event.effect.payload."+field, "must be an RFC 3339 time, got %q", s)
	}
	return t, nil
}
