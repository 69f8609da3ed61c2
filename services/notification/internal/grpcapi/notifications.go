package grpcapi

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
)

// ListNotifications implements notificationv1.NotificationServiceServer.
func (s *Server) ListNotifications(ctx context.Context, req *notificationv1.ListNotificationsRequest) (*notificationv1.ListNotificationsResponse, error) {
	f, err := domain.NewFilter(req.GetUnread(), req.GetType(), req.GetSessionId(), req.GetIncludeDismissed(), int(req.GetPageSize()), req.GetPageToken())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	page, err := s.notifications.List.Handle(ctx, f)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	resp := &notificationv1.ListNotificationsResponse{
		Notifications: make([]*notificationv1.Notification, 0, len(page.Notifications)),
		NextPageToken: page.NextPageToken,
		UnreadCount:   int32(min(page.UnreadCount, 1<<31-1)),
	}
	for _, n := range page.Notifications {
		resp.Notifications = append(resp.Notifications, notificationMessage(n))
	}
	return resp, nil
}

// MarkNotificationRead implements notificationv1.NotificationServiceServer.
func (s *Server) MarkNotificationRead(ctx context.Context, req *notificationv1.MarkNotificationReadRequest) (*notificationv1.MarkNotificationReadResponse, error) {
	n, err := s.notifications.MarkRead.Handle(ctx, req.GetNotificationId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &notificationv1.MarkNotificationReadResponse{Notification: notificationMessage(n)}, nil
}

// DismissNotification implements notificationv1.NotificationServiceServer.
func (s *Server) DismissNotification(ctx context.Context, req *notificationv1.DismissNotificationRequest) (*notificationv1.DismissNotificationResponse, error) {
	n, err := s.notifications.Dismiss.Handle(ctx, req.GetNotificationId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &notificationv1.DismissNotificationResponse{Notification: notificationMessage(n)}, nil
}

// MarkAllNotificationsRead implements notificationv1.NotificationServiceServer.
func (s *Server) MarkAllNotificationsRead(ctx context.Context, req *notificationv1.MarkAllNotificationsReadRequest) (*notificationv1.MarkAllNotificationsReadResponse, error) {
	marked, err := s.notifications.MarkAllRead.Handle(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &notificationv1.MarkAllNotificationsReadResponse{Marked: int32(min(marked, 1<<31-1))}, nil
}

// SendPushNotification implements notificationv1.NotificationServiceServer.
func (s *Server) SendPushNotification(ctx context.Context, req *notificationv1.SendPushNotificationRequest) (*notificationv1.SendPushNotificationResponse, error) {
	n, err := s.notifications.Send.Handle(ctx, domain.AgentMessage{SessionID: req.GetSessionId(), Title: req.GetTitle(), Body: req.GetBody()})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &notificationv1.SendPushNotificationResponse{Notification: notificationMessage(n)}, nil
}

func notificationMessage(n domain.Notification) *notificationv1.Notification {
	return &notificationv1.Notification{
		Id:          n.ID,
		Type:        string(n.Type),
		SessionId:   n.SessionID,
		Title:       n.Title,
		Body:        n.Body,
		Marker:      n.Marker,
		Read:        n.ReadAt != nil,
		Dismissed:   n.DismissedAt != nil,
		Stale:       n.StaleAt != nil,
		CreatedAt:   timestamppb.New(n.CreatedAt),
		ReadAt:      timestamp(n.ReadAt),
		DismissedAt: timestamp(n.DismissedAt),
		PushedAt:    timestamp(n.PushedAt),
	}
}

// timestamp is t on the wire, unset for nil.
func timestamp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
