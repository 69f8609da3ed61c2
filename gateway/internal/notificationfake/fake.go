// Package notificationfake is a notification service for the gateway's
// tests: a grpcfake recorder. A call answers what the test set (Answer,
// Handle, FailWith), else the method's empty response; Notification and
// Alert build the answers. The notification service's own tests prove its
// rules (the inbox's filters and pages, the push's validation and its
// attribution, the debounce, the sinks, the dedup window).
package notificationfake

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcfake"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

// Now is the timestamps of Notification's and Alert's answers.
var Now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Notification is notification id, of type about session with title,
// unread, created at Now.
func Notification(id int64, typ string, session int64, title string) *notificationv1.Notification {
	return &notificationv1.Notification{Id: id, Type: typ, SessionId: session, Title: title, CreatedAt: timestamppb.New(Now)}
}

// Read is n as the service answers it once read.
func Read(n *notificationv1.Notification) *notificationv1.Notification {
	n.Read, n.ReadAt = true, timestamppb.New(Now)
	return n
}

// Dismissed is n as the service answers it once dismissed.
func Dismissed(n *notificationv1.Notification) *notificationv1.Notification {
	n.Dismissed, n.DismissedAt = true, timestamppb.New(Now)
	return n
}

// Alert is alert id under dedupKey, raised occurrences times, first and
// last at Now.
func Alert(id int64, dedupKey, summary string, occurrences int32) *notificationv1.Alert {
	return &notificationv1.Alert{Id: id, DedupKey: dedupKey, Summary: summary, Occurrences: occurrences,
		FirstSeenAt: timestamppb.New(Now), LastSeenAt: timestamppb.New(Now), DedupUntil: timestamppb.New(Now.Add(time.Hour))}
}

// Call is one call the fake received.
type Call = grpcfake.Call

// Server implements notificationv1.NotificationServiceServer as a recorder.
type Server struct {
	notificationv1.UnimplementedNotificationServiceServer
	*grpcfake.Recorder
}

// New returns a fake with no calls, answering empty responses.
func New() *Server { return &Server{Recorder: grpcfake.NewRecorder(nil)} }

// Register adds the fake to g.
func (s *Server) Register(g *grpc.Server) { notificationv1.RegisterNotificationServiceServer(g, s) }

// RaiseAlert implements notificationv1.NotificationServiceServer.
func (s *Server) RaiseAlert(ctx context.Context, req *notificationv1.RaiseAlertRequest) (*notificationv1.RaiseAlertResponse, error) {
	return grpcfake.Answer[*notificationv1.RaiseAlertResponse](ctx, s.Recorder, req)
}

// ListAlerts implements notificationv1.NotificationServiceServer.
func (s *Server) ListAlerts(ctx context.Context, req *notificationv1.ListAlertsRequest) (*notificationv1.ListAlertsResponse, error) {
	return grpcfake.Answer[*notificationv1.ListAlertsResponse](ctx, s.Recorder, req)
}

// ListNotifications implements notificationv1.NotificationServiceServer.
func (s *Server) ListNotifications(ctx context.Context, req *notificationv1.ListNotificationsRequest) (*notificationv1.ListNotificationsResponse, error) {
	return grpcfake.Answer[*notificationv1.ListNotificationsResponse](ctx, s.Recorder, req)
}

// MarkNotificationRead implements notificationv1.NotificationServiceServer.
func (s *Server) MarkNotificationRead(ctx context.Context, req *notificationv1.MarkNotificationReadRequest) (*notificationv1.MarkNotificationReadResponse, error) {
	return grpcfake.Answer[*notificationv1.MarkNotificationReadResponse](ctx, s.Recorder, req)
}

// DismissNotification implements notificationv1.NotificationServiceServer.
func (s *Server) DismissNotification(ctx context.Context, req *notificationv1.DismissNotificationRequest) (*notificationv1.DismissNotificationResponse, error) {
	return grpcfake.Answer[*notificationv1.DismissNotificationResponse](ctx, s.Recorder, req)
}

// MarkAllNotificationsRead implements notificationv1.NotificationServiceServer.
func (s *Server) MarkAllNotificationsRead(ctx context.Context, req *notificationv1.MarkAllNotificationsReadRequest) (*notificationv1.MarkAllNotificationsReadResponse, error) {
	return grpcfake.Answer[*notificationv1.MarkAllNotificationsReadResponse](ctx, s.Recorder, req)
}

// SendPushNotification implements notificationv1.NotificationServiceServer.
func (s *Server) SendPushNotification(ctx context.Context, req *notificationv1.SendPushNotificationRequest) (*notificationv1.SendPushNotificationResponse, error) {
	return grpcfake.Answer[*notificationv1.SendPushNotificationResponse](ctx, s.Recorder, req)
}

// AcceptSlackEvent implements notificationv1.NotificationServiceServer.
func (s *Server) AcceptSlackEvent(ctx context.Context, req *notificationv1.AcceptSlackEventRequest) (*notificationv1.AcceptSlackEventResponse, error) {
	return grpcfake.Answer[*notificationv1.AcceptSlackEventResponse](ctx, s.Recorder, req)
}

// ListSlackTriggers implements notificationv1.NotificationServiceServer.
func (s *Server) ListSlackTriggers(ctx context.Context, req *notificationv1.ListSlackTriggersRequest) (*notificationv1.ListSlackTriggersResponse, error) {
	return grpcfake.Answer[*notificationv1.ListSlackTriggersResponse](ctx, s.Recorder, req)
}

// CreateSlackTrigger implements notificationv1.NotificationServiceServer.
func (s *Server) CreateSlackTrigger(ctx context.Context, req *notificationv1.CreateSlackTriggerRequest) (*notificationv1.CreateSlackTriggerResponse, error) {
	return grpcfake.Answer[*notificationv1.CreateSlackTriggerResponse](ctx, s.Recorder, req)
}

// DeleteSlackTrigger implements notificationv1.NotificationServiceServer.
func (s *Server) DeleteSlackTrigger(ctx context.Context, req *notificationv1.DeleteSlackTriggerRequest) (*notificationv1.DeleteSlackTriggerResponse, error) {
	return grpcfake.Answer[*notificationv1.DeleteSlackTriggerResponse](ctx, s.Recorder, req)
}
