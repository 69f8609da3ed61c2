package grpcapi

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
)

// WithPullRequests serves RecordPullRequest and AcceptGitHubDelivery.
func (s *Server) WithPullRequests(record app.RecordPullRequest, deliveries app.AcceptGitHubDelivery) *Server {
	s.recordPullRequest, s.githubDeliveries = record, deliveries
	return s
}

// RecordPullRequest implements lifecyclev1.LifecycleServiceServer.
func (s *Server) RecordPullRequest(ctx context.Context, req *lifecyclev1.RecordPullRequestRequest) (*lifecyclev1.RecordPullRequestResponse, error) {
	if s.recordPullRequest.Repo == nil {
		return nil, status.Error(codes.Unimplemented, "this lifecycle does not track pull requests")
	}
	pr, recorded, err := s.recordPullRequest.Handle(ctx, req.GetSessionId(), req.GetTurnId(), req.GetUrl())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &lifecyclev1.RecordPullRequestResponse{PullRequest: wire.PullRequest(pr), Recorded: recorded}, nil
}

// AcceptGitHubDelivery implements lifecyclev1.LifecycleServiceServer.
func (s *Server) AcceptGitHubDelivery(ctx context.Context, req *lifecyclev1.AcceptGitHubDeliveryRequest) (*lifecyclev1.AcceptGitHubDeliveryResponse, error) {
	if s.githubDeliveries.Repo == nil {
		return nil, status.Error(codes.Unimplemented, "this lifecycle does not take GitHub deliveries")
	}
	out, err := s.githubDeliveries.Handle(ctx, req.GetDeliveryId(), req.GetEvent(), req.GetPayload())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	switch {
	case out.Duplicate:
		return &lifecyclev1.AcceptGitHubDeliveryResponse{Outcome: lifecyclev1.GitHubDeliveryOutcome_GIT_HUB_DELIVERY_OUTCOME_DUPLICATE,
			Message: fmt.Sprintf("delivery %s was taken before; nothing more is done", req.GetDeliveryId())}, nil
	case out.Ignored != "":
		return &lifecyclev1.AcceptGitHubDeliveryResponse{Outcome: lifecyclev1.GitHubDeliveryOutcome_GIT_HUB_DELIVERY_OUTCOME_IGNORED,
			Message: "ignored: " + out.Ignored}, nil
	}
	return &lifecyclev1.AcceptGitHubDeliveryResponse{Outcome: lifecyclev1.GitHubDeliveryOutcome_GIT_HUB_DELIVERY_OUTCOME_ACCEPTED,
		Message: fmt.Sprintf("accepted: %d watch(es) read the pull request now", out.Poked)}, nil
}
