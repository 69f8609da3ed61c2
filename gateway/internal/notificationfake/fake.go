// Package notificationfake is a notification service for the gateway's
// tests: it records every call and keeps an inbox and a list of alerts in
// memory, so REST and MCP can be driven end to end against it. A push
// from a session credential is attributed to its session (as the real
// service does, whatever session_id says); nothing reaches a sink. The
// notification service's own tests prove the real rules (the debounce,
// the sinks, the dedup window).
package notificationfake

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Now is every notification's and alert's timestamps.
var Now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Limits of a push, as the service states them in its API.
const (
	MaxTitleChars = 200
	MaxBodyChars  = 4000
)

// Call is one call the fake received.
type Call struct {
	Method    string
	Request   proto.Message
	Principal principal.Principal // the principal the gateway forwarded
}

// Server implements notificationv1.NotificationServiceServer.
type Server struct {
	notificationv1.UnimplementedNotificationServiceServer

	mu            sync.Mutex
	calls         []Call
	notifications []*notificationv1.Notification // oldest first
	alerts        []*notificationv1.Alert        // newest first
	fail          error
	nextID        int64
}

// New returns a fake with an empty inbox and no alerts.
func New() *Server { return &Server{} }

// Register adds the fake to g.
func (s *Server) Register(g *grpc.Server) { notificationv1.RegisterNotificationServiceServer(g, s) }

// FailWith makes every later call fail with err (nil: answer again).
func (s *Server) FailWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// Add puts n in the inbox (as the service's consumer would) with the next
// id and Now as its creation time, and returns a copy.
func (s *Server) Add(n *notificationv1.Notification) *notificationv1.Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return proto.Clone(s.add(n)).(*notificationv1.Notification)
}

// SetAlerts makes ListAlerts answer alerts (newest first).
func (s *Server) SetAlerts(alerts ...*notificationv1.Alert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.alerts = nil
	for _, a := range alerts {
		s.alerts = append(s.alerts, proto.Clone(a).(*notificationv1.Alert))
	}
}

// Calls are the calls received so far, oldest first; with methods, only
// the calls of those.
func (s *Server) Calls(methods ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if len(methods) == 0 || slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// record notes the call and returns FailWith's error, with mu held.
func (s *Server) record(ctx context.Context, method string, req proto.Message) (principal.Principal, error) {
	p, _ := principal.FromContext(ctx)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Request: proto.Clone(req), Principal: p})
	return p, s.fail
}

func (s *Server) add(n *notificationv1.Notification) *notificationv1.Notification {
	n = proto.Clone(n).(*notificationv1.Notification)
	s.nextID++
	n.Id, n.CreatedAt = s.nextID, timestamppb.New(Now)
	s.notifications = append(s.notifications, n)
	return n
}

func (s *Server) find(id int64) (*notificationv1.Notification, error) {
	for _, n := range s.notifications {
		if n.GetId() == id {
			return n, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "notification %d not found; list them with GET /api/v1/notifications", id)
}

// pageSize is the service's page size rule: 0 means 50, at most 500.
func pageSize(n int32) (int, error) {
	switch {
	case n == 0:
		return 50, nil
	case n < 0 || n > 500:
		return 0, grpcstatus.InvalidArgument(validation.Invalid("page_size", "is %d; use 1 to 500 (0: 50)", n))
	}
	return int(n), nil
}

// ListNotifications implements notificationv1.NotificationServiceServer:
// newest first, filtered; the page token is the offset.
func (s *Server) ListNotifications(ctx context.Context, req *notificationv1.ListNotificationsRequest) (*notificationv1.ListNotificationsResponse, error) {
	_, err := s.record(ctx, "ListNotifications", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	size, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	offset := 0
	if tok := req.GetPageToken(); tok != "" {
		if offset, err = strconv.Atoi(tok); err != nil || offset < 0 {
			return nil, grpcstatus.InvalidArgument(validation.Invalid("page_token", "%q is not a token this service gave; leave it out for the first page", tok))
		}
	}
	resp := &notificationv1.ListNotificationsResponse{Notifications: []*notificationv1.Notification{}}
	var matched []*notificationv1.Notification
	for _, n := range slices.Backward(s.notifications) {
		if !n.GetRead() && !n.GetDismissed() {
			resp.UnreadCount++
		}
		switch {
		case req.GetUnread() && n.GetRead(),
			req.GetType() != "" && n.GetType() != req.GetType(),
			req.GetSessionId() != 0 && n.GetSessionId() != req.GetSessionId(),
			!req.GetIncludeDismissed() && n.GetDismissed():
			continue
		}
		matched = append(matched, n)
	}
	for i := offset; i < len(matched) && i < offset+size; i++ {
		resp.Notifications = append(resp.Notifications, proto.Clone(matched[i]).(*notificationv1.Notification))
	}
	if offset+size < len(matched) {
		resp.NextPageToken = strconv.Itoa(offset + size)
	}
	return resp, nil
}

// MarkNotificationRead implements notificationv1.NotificationServiceServer.
func (s *Server) MarkNotificationRead(ctx context.Context, req *notificationv1.MarkNotificationReadRequest) (*notificationv1.MarkNotificationReadResponse, error) {
	_, err := s.record(ctx, "MarkNotificationRead", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	n, err := s.find(req.GetNotificationId())
	if err != nil {
		return nil, err
	}
	markRead(n)
	return &notificationv1.MarkNotificationReadResponse{Notification: proto.Clone(n).(*notificationv1.Notification)}, nil
}

func markRead(n *notificationv1.Notification) bool {
	if n.GetRead() {
		return false
	}
	n.Read, n.ReadAt = true, timestamppb.New(Now)
	return true
}

// DismissNotification implements notificationv1.NotificationServiceServer.
func (s *Server) DismissNotification(ctx context.Context, req *notificationv1.DismissNotificationRequest) (*notificationv1.DismissNotificationResponse, error) {
	_, err := s.record(ctx, "DismissNotification", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	n, err := s.find(req.GetNotificationId())
	if err != nil {
		return nil, err
	}
	if !n.GetDismissed() {
		n.Dismissed, n.DismissedAt = true, timestamppb.New(Now)
	}
	return &notificationv1.DismissNotificationResponse{Notification: proto.Clone(n).(*notificationv1.Notification)}, nil
}

// MarkAllNotificationsRead implements notificationv1.NotificationServiceServer.
func (s *Server) MarkAllNotificationsRead(ctx context.Context, req *notificationv1.MarkAllNotificationsReadRequest) (*notificationv1.MarkAllNotificationsReadResponse, error) {
	_, err := s.record(ctx, "MarkAllNotificationsRead", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	resp := &notificationv1.MarkAllNotificationsReadResponse{}
	for _, n := range s.notifications {
		if (req.GetSessionId() == 0 || n.GetSessionId() == req.GetSessionId()) && markRead(n) {
			resp.Marked++
		}
	}
	return resp, nil
}

// SendPushNotification implements notificationv1.NotificationServiceServer:
// an agent_message from the calling session (a session credential's own,
// whatever session_id says), pushed at once.
func (s *Server) SendPushNotification(ctx context.Context, req *notificationv1.SendPushNotificationRequest) (*notificationv1.SendPushNotificationResponse, error) {
	p, err := s.record(ctx, "SendPushNotification", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var vs validation.Violations
	switch title := []rune(req.GetTitle()); {
	case len(title) == 0:
		vs.Add("title", "is required: one line the operator reads first")
	case len(title) > MaxTitleChars:
		vs.Add("title", "is longer than %d characters", MaxTitleChars)
	}
	if len([]rune(req.GetBody())) > MaxBodyChars {
		vs.Add("body", "is longer than %d characters", MaxBodyChars)
	}
	var verr *validation.Error
	if errors.As(vs.Err(), &verr) {
		return nil, grpcstatus.InvalidArgument(verr)
	}
	from := req.GetSessionId()
	if p.Kind == principal.Session {
		from = p.SessionID
	}
	n := s.add(&notificationv1.Notification{
		Type: "agent_message", SessionId: from, Title: req.GetTitle(), Body: req.GetBody(), PushedAt: timestamppb.New(Now),
	})
	return &notificationv1.SendPushNotificationResponse{Notification: proto.Clone(n).(*notificationv1.Notification)}, nil
}

// ListAlerts implements notificationv1.NotificationServiceServer.
func (s *Server) ListAlerts(ctx context.Context, req *notificationv1.ListAlertsRequest) (*notificationv1.ListAlertsResponse, error) {
	_, err := s.record(ctx, "ListAlerts", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	size, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	resp := &notificationv1.ListAlertsResponse{Alerts: []*notificationv1.Alert{}}
	for _, a := range s.alerts[:min(size, len(s.alerts))] {
		resp.Alerts = append(resp.Alerts, proto.Clone(a).(*notificationv1.Alert))
	}
	return resp, nil
}

// RaiseAlert implements notificationv1.NotificationServiceServer: a raise
// of an open key counts on it, any other opens an alert (and "pages").
func (s *Server) RaiseAlert(ctx context.Context, req *notificationv1.RaiseAlertRequest) (*notificationv1.RaiseAlertResponse, error) {
	_, err := s.record(ctx, "RaiseAlert", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if req.GetDedupKey() == "" || req.GetSummary() == "" {
		return nil, status.Error(codes.InvalidArgument, "dedup_key and summary are required")
	}
	for _, a := range s.alerts {
		if a.GetDedupKey() == req.GetDedupKey() {
			a.Occurrences++
			return &notificationv1.RaiseAlertResponse{Alert: proto.Clone(a).(*notificationv1.Alert)}, nil
		}
	}
	a := &notificationv1.Alert{
		Id: int64(len(s.alerts) + 1), DedupKey: req.GetDedupKey(), Summary: req.GetSummary(), Details: req.GetDetails(), Occurrences: 1,
		FirstSeenAt: timestamppb.New(Now), LastSeenAt: timestamppb.New(Now), DedupUntil: timestamppb.New(Now.Add(time.Hour)),
	}
	s.alerts = append([]*notificationv1.Alert{a}, s.alerts...)
	return &notificationv1.RaiseAlertResponse{Alert: proto.Clone(a).(*notificationv1.Alert), Paged: true}, nil
}
