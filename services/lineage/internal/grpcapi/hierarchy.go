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

// RetractUncleEdge implements lineagev1.LineageServiceServer.
func (s *Server) RetractUncleEdge(ctx context.Context, req *lineagev1.RetractUncleEdgeRequest) (*lineagev1.RetractUncleEdgeResponse, error) {
	d, err := s.retract.Handle(ctx, domain.UncleRetraction{
		Edge: domain.UncleEdge{
			SessionID:      req.GetTargetSessionId(),
			UncleSessionID: req.GetActingSessionId(),
			EntryPoint:     req.GetEntryPoint(),
			RecordedBy:     auditBy(ctx),
		},
		Recorded: outcomeFromProto(req.GetRecorded()),
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lineagev1.RetractUncleEdgeResponse{Retracted: d.Retracted(), Message: d.Message}, nil
}

// uncleOutcomes pairs each domain outcome with its wire form, both ways.
var uncleOutcomes = []struct {
	domain domain.UncleOutcome
	wire   lineagev1.UncleEdgeOutcome
}{
	{domain.UncleWritten, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN},
	{domain.UncleInverted, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_INVERTED},
	{domain.UncleNothingSelf, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_SELF},
	{domain.UncleNothingAlreadyReachable, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_ALREADY_REACHABLE},
	{domain.UncleNothingSpawnAncestor, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_SPAWN_ANCESTOR},
	{domain.UncleRefusedSenior, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_SENIOR},
	{domain.UncleRefusedUnknownSession, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_UNKNOWN_SESSION},
	{domain.UncleRefusedBudgetExhausted, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_BUDGET_EXHAUSTED},
}

func outcomeToProto(o domain.UncleOutcome) lineagev1.UncleEdgeOutcome {
	for _, p := range uncleOutcomes {
		if p.domain == o {
			return p.wire
		}
	}
	return lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_UNSPECIFIED
}

// outcomeFromProto is the domain outcome of o; zero, which the domain
// refuses as invalid, for UNSPECIFIED and values this build does not know.
func outcomeFromProto(o lineagev1.UncleEdgeOutcome) domain.UncleOutcome {
	for _, p := range uncleOutcomes {
		if p.wire == o {
			return p.domain
		}
	}
	return 0
}
