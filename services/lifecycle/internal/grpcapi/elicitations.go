package grpcapi

import (
	"context"
	"fmt"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
)

// ListElicitations implements lifecyclev1.LifecycleServiceServer.
func (s *Server) ListElicitations(ctx context.Context, req *lifecyclev1.ListElicitationsRequest) (*lifecyclev1.ListElicitationsResponse, error) {
	ref, err := s.readableRef(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	sess, pending, err := s.sessions.Elicitations.Pending(ctx, ref)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &lifecyclev1.ListElicitationsResponse{Elicitations: make([]*lifecyclev1.Elicitation, 0, len(pending))}
	for _, e := range pending {
		m, err := wire.Elicitation(sess.ID, e)
		if err != nil {
			return nil, s.toStatus(ctx, err)
		}
		resp.Elicitations = append(resp.Elicitations, m)
	}
	return resp, nil
}

// AnswerElicitation implements lifecyclev1.LifecycleServiceServer. The
// access rule keeps session credentials out: an agent never answers its
// own question.
func (s *Server) AnswerElicitation(ctx context.Context, req *lifecyclev1.AnswerElicitationRequest) (*lifecyclev1.AnswerElicitationResponse, error) {
	answer := domain.ElicitationAnswer{Action: req.GetAction()}
	if req.GetContent() != nil {
		answer.Content = req.GetContent().AsMap()
	}
	sess, action, err := s.sessions.Elicitations.Answer(ctx, req.GetSessionId(), req.GetElicitationId(), answer, auditBy(ctx))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	msg, err := wire.Session(sess)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.AnswerElicitationResponse{Session: msg, Action: action,
		Message: fmt.Sprintf("Session %d's agent took the answer to elicitation %q: %s.", sess.ID, req.GetElicitationId(), action)}, nil
}
