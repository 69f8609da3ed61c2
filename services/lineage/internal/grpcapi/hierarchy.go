package grpcapi

import (
	"context"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// GetSessionHierarchy implements lineagev1.LineageServiceServer.
func (s *Server) GetSessionHierarchy(ctx context.Context, req *lineagev1.GetSessionHierarchyRequest) (*lineagev1.GetSessionHierarchyResponse, error) {
	h, err := s.hierarchy.Handle(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lineagev1.GetSessionHierarchyResponse{SessionHierarchy: HierarchyToProto(h)}, nil
}

// HierarchyToProto is the wire form of h, outline included.
func HierarchyToProto(h domain.Hierarchy) *lineagev1.SessionHierarchy {
	out := &lineagev1.SessionHierarchy{
		OriginSessionId:  h.OriginID,
		RootSessionIds:   h.RootIDs,
		Truncated:        h.Truncated,
		TruncationReason: h.TruncationReason,
		Nodes:            make([]*lineagev1.HierarchyNode, 0, len(h.Nodes)),
		Outline:          h.Outline(),
	}
	for _, n := range h.Nodes {
		out.Nodes = append(out.Nodes, &lineagev1.HierarchyNode{
			Id:              n.ID,
			Title:           n.Title,
			AgentRoot:       n.AgentRoot,
			Status:          n.Status,
			Depth:           int32(n.Depth), //nolint:gosec // at most MaxDepth
			ParentSessionId: n.ParentID,
			UncleSessionIds: n.UncleIDs,
			Current:         n.Current,
			Genesis:         n.Genesis,
			SchedulingClass: n.SchedulingClass,
			Label:           n.Label(),
		})
	}
	return out
}

// RecordUncleEdge implements lineagev1.LineageServiceServer.
func (s *Server) RecordUncleEdge(ctx context.Context, req *lineagev1.RecordUncleEdgeRequest) (*lineagev1.RecordUncleEdgeResponse, error) {
	d, err := s.uncle.Handle(ctx, domain.UncleEdge{
		SessionID:      req.GetTargetSessionId(),
		UncleSessionID: req.GetActingSessionId(),
		EntryPoint:     req.GetEntryPoint(),
		RecordedBy:     auditBy(ctx),
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lineagev1.RecordUncleEdgeResponse{Outcome: outcomeToProto(d.Outcome), Message: d.Message}, nil
}

func outcomeToProto(o domain.UncleOutcome) lineagev1.UncleEdgeOutcome {
	switch o {
	case domain.UncleWritten:
		return lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN
	case domain.UncleInverted:
		return lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_INVERTED
	case domain.UncleNothingSelf:
		return lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_SELF
	case domain.UncleNothingAlreadyReachable:
		return lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_ALREADY_REACHABLE
	case domain.UncleNothingSpawnAncestor:
		return lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_SPAWN_ANCESTOR
	case domain.UncleRefusedSenior:
		return lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_SENIOR
	case domain.UncleRefusedUnknownSession:
		return lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_UNKNOWN_SESSION
	case domain.UncleRefusedBudgetExhausted:
		return lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_BUDGET_EXHAUSTED
	}
	return lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_UNSPECIFIED
}
