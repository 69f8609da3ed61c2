// Package grpcapi serves lineage's gRPC APIs over the app's use cases:
// LineageService, ProvenanceService, and lineage's side of lifecycle's
// delivery contract, SessionEventConsumerService.
package grpcapi

import (
	"context"
	"log/slog"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
)

// Server implements lineagev1.LineageServiceServer.
type Server struct {
	lineagev1.UnimplementedLineageServiceServer
	get       app.GetSessionNode
	hierarchy app.GetHierarchy
	uncle     app.RecordUncleEdge
	retract   app.RetractUncleEdge
	logger    *slog.Logger
}

var _ lineagev1.LineageServiceServer = (*Server)(nil)

// New returns a server over the use cases; logger receives the errors that
// are reported to callers only as "internal error".
func New(logger *slog.Logger, get app.GetSessionNode, hierarchy app.GetHierarchy, uncle app.RecordUncleEdge, retract app.RetractUncleEdge) *Server {
	return &Server{get: get, hierarchy: hierarchy, uncle: uncle, retract: retract, logger: logger}
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
