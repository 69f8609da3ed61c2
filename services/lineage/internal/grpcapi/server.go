// Package grpcapi serves lineagev1.LineageService over the app's use cases.
package grpcapi

import (
	"context"
	"log/slog"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Server implements lineagev1.LineageServiceServer.
type Server struct {
	lineagev1.UnimplementedLineageServiceServer
	apply     app.ApplySessionEvent
	get       app.GetSessionNode
	hierarchy app.GetHierarchy
	uncle     app.RecordUncleEdge
	logger    *slog.Logger
}

var _ lineagev1.LineageServiceServer = (*Server)(nil)

// New returns a server over the use cases; logger receives the errors that
// are reported to callers only as "internal error".
func New(logger *slog.Logger, apply app.ApplySessionEvent, get app.GetSessionNode,
	hierarchy app.GetHierarchy, uncle app.RecordUncleEdge,
) *Server {
	return &Server{apply: apply, get: get, hierarchy: hierarchy, uncle: uncle, logger: logger}
}

// ApplySessionEvent implements lineagev1.LineageServiceServer.
func (s *Server) ApplySessionEvent(ctx context.Context, req *lineagev1.ApplySessionEventRequest) (*lineagev1.ApplySessionEventResponse, error) {
	ev, err := sessionEventFromProto(req.GetEvent())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	applied, err := s.apply.Handle(ctx, ev)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lineagev1.ApplySessionEventResponse{Applied: applied}, nil
}

// GetSessionNode implements lineagev1.LineageServiceServer.
func (s *Server) GetSessionNode(ctx context.Context, req *lineagev1.GetSessionNodeRequest) (*lineagev1.GetSessionNodeResponse, error) {
	n, err := s.get.Handle(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lineagev1.GetSessionNodeResponse{Node: &lineagev1.SessionNode{
		SessionId:       n.SessionID,
		SpawnParentId:   n.SpawnParentID(),
		SpawnChildIds:   n.SpawnChildIDs,
		Title:           n.Title,
		AgentRoot:       n.AgentRoot,
		Status:          n.Status,
		Genesis:         n.Genesis,
		SchedulingClass: n.SchedulingClass,
	}}, nil
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
