package grpcapi

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
)

// AcceptSlackEvent implements notificationv1.NotificationServiceServer.
func (s *Server) AcceptSlackEvent(ctx context.Context, req *notificationv1.AcceptSlackEventRequest) (*notificationv1.AcceptSlackEventResponse, error) {
	accepted, err := s.slack.Accept.Handle(ctx, req.GetEventId(), req.GetPayload())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if !accepted {
		s.logger.InfoContext(ctx, "slack event delivered again; not processed twice", "event_id", req.GetEventId(), "retry_num", req.GetRetryNum())
	}
	return &notificationv1.AcceptSlackEventResponse{Accepted: accepted}, nil
}

// ListSlackTriggers implements notificationv1.NotificationServiceServer.
func (s *Server) ListSlackTriggers(ctx context.Context, _ *notificationv1.ListSlackTriggersRequest) (*notificationv1.ListSlackTriggersResponse, error) {
	ts, err := s.slack.Triggers.List(ctx)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &notificationv1.ListSlackTriggersResponse{SlackTriggers: make([]*notificationv1.SlackTrigger, 0, len(ts))}
	for _, t := range ts {
		resp.SlackTriggers = append(resp.SlackTriggers, slackTriggerMessage(t))
	}
	return resp, nil
}

// CreateSlackTrigger implements notificationv1.NotificationServiceServer.
func (s *Server) CreateSlackTrigger(ctx context.Context, req *notificationv1.CreateSlackTriggerRequest) (*notificationv1.CreateSlackTriggerResponse, error) {
	t, err := s.slack.Triggers.Create(ctx, domain.SlackTrigger{
		Channel: req.GetChannel(), AllowedUserIDs: req.GetAllowedUserIds(), Prefix: req.GetPrefix(), RequireMention: req.GetRequireMention(),
		GitRoot: req.GetGitRoot(), AgentRoot: req.GetAgentRoot(), AgentRuntime: req.GetAgentRuntime(),
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &notificationv1.CreateSlackTriggerResponse{SlackTrigger: slackTriggerMessage(t)}, nil
}

// DeleteSlackTrigger implements notificationv1.NotificationServiceServer.
func (s *Server) DeleteSlackTrigger(ctx context.Context, req *notificationv1.DeleteSlackTriggerRequest) (*notificationv1.DeleteSlackTriggerResponse, error) {
	if err := s.slack.Triggers.Delete(ctx, req.GetTriggerId()); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &notificationv1.DeleteSlackTriggerResponse{}, nil
}

func slackTriggerMessage(t domain.SlackTrigger) *notificationv1.SlackTrigger {
	return &notificationv1.SlackTrigger{
		Id: t.ID, Channel: t.Channel, AllowedUserIds: t.AllowedUserIDs, Prefix: t.Prefix, RequireMention: t.RequireMention,
		GitRoot: t.GitRoot, AgentRoot: t.AgentRoot, AgentRuntime: t.AgentRuntime, CreatedAt: timestamppb.New(t.CreatedAt),
	}
}
