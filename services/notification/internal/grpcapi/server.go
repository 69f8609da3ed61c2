// Package grpcapi serves zimmer.notification.v1.NotificationService (the
// inbox, agents' pushes, alerts) and lifecycle's notification effects
// (zimmer.lifecycle.v1.SessionEventConsumerService) over the app use cases.
package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
)

// Server implements notificationv1.NotificationServiceServer. The embedded
// UnimplementedNotificationServiceServer answers methods added to the proto
// before they are written here with codes.Unimplemented.
type Server struct {
	notificationv1.UnimplementedNotificationServiceServer
	alerts        app.Alerts
	notifications app.Notifications
	slack         app.Slack
	logger        *slog.Logger
}

var _ notificationv1.NotificationServiceServer = (*Server)(nil)

// NewServer returns the notification API over the use cases.
func NewServer(alerts app.Alerts, notifications app.Notifications, slack app.Slack, logger *slog.Logger) *Server {
	return &Server{alerts: alerts, notifications: notifications, slack: slack, logger: logger}
}

// Register adds the service to g.
func (s *Server) Register(g *grpc.Server) { notificationv1.RegisterNotificationServiceServer(g, s) }

// RaiseAlert implements notificationv1.NotificationServiceServer.
func (s *Server) RaiseAlert(ctx context.Context, req *notificationv1.RaiseAlertRequest) (*notificationv1.RaiseAlertResponse, error) {
	r := domain.Raise{DedupKey: req.GetDedupKey(), Summary: req.GetSummary()}
	if d := req.GetDetails(); d != nil {
		r.Details = d.AsMap()
		r.DetailsBytes = proto.Size(d)
	}
	a, paged, err := s.alerts.Raise.Handle(ctx, r)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	msg, err := alertMessage(a)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &notificationv1.RaiseAlertResponse{Alert: msg, Paged: paged}, nil
}

// ListAlerts implements notificationv1.NotificationServiceServer.
func (s *Server) ListAlerts(ctx context.Context, req *notificationv1.ListAlertsRequest) (*notificationv1.ListAlertsResponse, error) {
	alerts, err := s.alerts.List.Handle(ctx, int(req.GetPageSize()))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &notificationv1.ListAlertsResponse{Alerts: make([]*notificationv1.Alert, 0, len(alerts))}
	for _, a := range alerts {
		msg, err := alertMessage(a)
		if err != nil {
			return nil, s.toStatus(ctx, err)
		}
		resp.Alerts = append(resp.Alerts, msg)
	}
	return resp, nil
}

func alertMessage(a domain.Alert) (*notificationv1.Alert, error) {
	details, err := structpb.NewStruct(a.Details)
	if err != nil {
		return nil, fmt.Errorf("encode details of alert %d: %w", a.ID, err)
	}
	return &notificationv1.Alert{
		Id:          a.ID,
		DedupKey:    a.DedupKey,
		Summary:     a.Summary,
		Details:     details,
		Occurrences: a.Occurrences,
		FirstSeenAt: timestamppb.New(a.FirstSeenAt),
		LastSeenAt:  timestamppb.New(a.LastSeenAt),
		DedupUntil:  timestamppb.New(a.DedupUntil),
	}, nil
}

// toStatus is the only mapping from errors to gRPC codes: grpcstatus maps
// the errors every service shares; a notification that is not there is
// NotFound in the domain's words; a debounce this service cannot run, and
// a push or debounce Temporal did not take, are Unavailable (lifecycle
// retries it, and never parks it dead for that). Unexpected errors are logged and
// answered with "internal error": their text may carry details a caller
// must not see.
func (s *Server) toStatus(ctx context.Context, err error) error {
	if st, ok := grpcstatus.Common(err); ok {
		return st
	}
	switch {
	case errors.Is(err, domain.ErrNotFound), errors.Is(err, domain.ErrTriggerNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, app.ErrNoDebounce):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, app.ErrNotStarted):
		// Temporal's error may name its hosts: logged, not answered.
		s.logger.WarnContext(ctx, "could not start on Temporal", "error", err)
		return status.Error(codes.Unavailable, "Temporal did not take the workflow's start; retry shortly")
	}
	s.logger.ErrorContext(ctx, "internal error", "error", err)
	return status.Error(codes.Internal, "internal error")
}
