package grpcapi

import (
	"context"
	"log/slog"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Consumer implements lifecyclev1.SessionEventConsumerServiceServer:
// lineage takes lifecycle's events through the one delivery contract every
// subscriber implements. Delivery is at least once; ApplySessionEvent's
// inbox makes a redelivery change nothing (applied false). An event lineage
// can never apply is InvalidArgument, which tells lifecycle's relay to park
// it as dead rather than retry it.
type Consumer struct {
	lifecyclev1.UnimplementedSessionEventConsumerServiceServer
	apply  app.ApplySessionEvent
	errors *Server // its toStatus
}

var _ lifecyclev1.SessionEventConsumerServiceServer = (*Consumer)(nil)

// NewConsumer returns the consumer over apply; logger receives the errors
// reported to the producer only as "internal error".
func NewConsumer(logger *slog.Logger, apply app.ApplySessionEvent) *Consumer {
	return &Consumer{apply: apply, errors: &Server{logger: logger}}
}

// ConsumeSessionEvent implements lifecyclev1.SessionEventConsumerServiceServer.
func (c *Consumer) ConsumeSessionEvent(ctx context.Context, req *lifecyclev1.ConsumeSessionEventRequest) (*lifecyclev1.ConsumeSessionEventResponse, error) {
	ev, err := sessionEventFromProto(req.GetEvent())
	if err != nil {
		return nil, c.errors.toStatus(ctx, err)
	}
	applied, err := c.apply.Handle(ctx, ev)
	if err != nil {
		return nil, c.errors.toStatus(ctx, err)
	}
	return &lifecyclev1.ConsumeSessionEventResponse{Applied: applied}, nil
}

// sessionEventFromProto translates the wire event. It refuses only what the
// wire shape makes unreadable; the use case validates the rest.
func sessionEventFromProto(e *lifecyclev1.SessionEvent) (app.SessionEvent, error) {
	if e == nil {
		return app.SessionEvent{}, validation.Invalid("event", "missing")
	}
	ev := app.SessionEvent{ID: e.GetEventId(), SessionID: e.GetSessionId()}
	switch p := e.GetPayload().(type) {
	case *lifecyclev1.SessionEvent_Created:
		s := p.Created.GetSession()
		if s == nil {
			return app.SessionEvent{}, validation.Invalid("event.created.session", "missing")
		}
		n := nodeFromProto(s)
		ev.Created = &n
	case *lifecyclev1.SessionEvent_Updated:
		s := p.Updated.GetSession()
		if s == nil {
			return app.SessionEvent{}, validation.Invalid("event.updated.session", "missing")
		}
		n := nodeFromProto(s)
		ev.Updated = &n
	case *lifecyclev1.SessionEvent_Deleted:
		id := p.Deleted.GetSessionId()
		switch {
		case id == 0:
			id = e.GetSessionId()
		case e.GetSessionId() != 0 && e.GetSessionId() != id:
			return app.SessionEvent{}, validation.Invalid("event.session_id", "is %d but the deleted session is %d", e.GetSessionId(), id)
		}
		ev.SessionID, ev.Deleted = id, true
	}
	return ev, nil
}

func nodeFromProto(s *lifecyclev1.Session) domain.Node {
	n := domain.Node{
		SessionID:       s.GetId(),
		Title:           s.GetTitle(),
		AgentRoot:       s.GetAgentRoot(),
		Status:          s.GetStatus(),
		Genesis:         s.GetGenesis(),
		SchedulingClass: s.GetSchedulingClass(),
		RouterSessionID: domain.RouterSessionID(s.GetId(), s.GetCustomMetadata().AsMap()),
	}
	if s.ParentSessionId != nil {
		parent := s.GetParentSessionId()
		n.ParentSessionID = &parent
	}
	if s.GetUpdatedAt() != nil {
		n.UpdatedAt = s.GetUpdatedAt().AsTime()
	}
	return n
}
