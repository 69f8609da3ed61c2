package grpcapi

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
)

// WithRecoveryCandidates serves ListRecoveryCandidates over uc.
func (s *Server) WithRecoveryCandidates(uc app.ListRecoveryCandidates) *Server {
	s.recoveryCandidates = uc
	return s
}

// ListRecoveryCandidates implements lifecyclev1.LifecycleServiceServer:
// internal, the runner's orphan sweep.
func (s *Server) ListRecoveryCandidates(ctx context.Context, req *lifecyclev1.ListRecoveryCandidatesRequest) (*lifecyclev1.ListRecoveryCandidatesResponse, error) {
	var settledBefore time.Time // absent: zero, which Handle refuses
	if t := timeOrNil(req.GetSettledBefore()); t != nil {
		settledBefore = *t
	}
	got, err := s.recoveryCandidates.Handle(ctx, settledBefore, int(req.GetLimit()))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &lifecyclev1.ListRecoveryCandidatesResponse{Candidates: make([]*lifecyclev1.RecoveryCandidate, 0, len(got))}
	for _, c := range got {
		resp.Candidates = append(resp.Candidates, &lifecyclev1.RecoveryCandidate{
			SessionId: c.SessionID, Status: c.Status.String(), PausedBy: c.PausedBy,
			BlockedOnElicitation: c.BlockedOnElicitation, RunningJobId: c.RunningJobID,
			UpdatedAt: timestamppb.New(c.UpdatedAt),
		})
	}
	return resp, nil
}
