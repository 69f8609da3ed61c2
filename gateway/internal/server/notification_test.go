package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/notificationfake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// lastNotificationRequest is the notification fake's last request of method.
func (b *testBundle) lastNotificationRequest(t *testing.T, method string) proto.Message {
	t.Helper()
	calls := b.notifications.Calls(method)
	require.NotEmpty(t, calls, "no %s call reached the notification service", method)
	return calls[len(calls)-1].Request
}

// The inbox over REST: the list with its filters, read, dismiss and
// read_all, each a thin call into the notification service, answered in
// the API's JSON (numeric ids, snake_case) and its error shape.
func TestNotificationsOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	first := notificationfake.Notification(1, "needs_input", 12, "#12 needs input")
	first.Marker = 3
	second := notificationfake.Notification(2, "failure", 13, "#13 failed")
	b.notifications.Answer("ListNotifications", &notificationv1.ListNotificationsResponse{
		UnreadCount: 2, Notifications: []*notificationv1.Notification{first},
	}, nil)

	resp := b.call(t, http.MethodGet, "/api/v1/notifications?unread=true&type=needs_input&session_id=12&page_size=5", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.True(t, proto.Equal(&notificationv1.ListNotificationsRequest{Unread: true, Type: "needs_input", SessionId: 12, PageSize: 5},
		b.lastNotificationRequest(t, "ListNotifications")))
	body := resp.json(t)
	require.Equal(t, json.Number("2"), body["unread_count"])
	list := body["notifications"].([]any)
	require.Len(t, list, 1)
	got := list[0].(map[string]any)
	require.Equal(t, json.Number("1"), got["id"], "ids are numbers")
	require.Equal(t, json.Number("12"), got["session_id"])
	require.Equal(t, json.Number("3"), got["marker"])
	require.Equal(t, "needs_input", got["type"])
	require.Equal(t, false, got["read"])

	read := notificationfake.Read(proto.CloneOf(first))
	b.notifications.Answer("MarkNotificationRead", &notificationv1.MarkNotificationReadResponse{Notification: read}, nil)
	resp = b.call(t, http.MethodPost, "/api/v1/notifications/1/read", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Equal(t, true, resp.json(t)["notification"].(map[string]any)["read"])
	require.True(t, proto.Equal(&notificationv1.MarkNotificationReadRequest{NotificationId: first.GetId()}, b.lastNotificationRequest(t, "MarkNotificationRead")))

	b.notifications.Answer("DismissNotification", &notificationv1.DismissNotificationResponse{Notification: notificationfake.Dismissed(second)}, nil)
	resp = b.call(t, http.MethodPost, "/api/v1/notifications/2/dismiss", "{}")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Equal(t, true, resp.json(t)["notification"].(map[string]any)["dismissed"])

	b.notifications.Answer("MarkAllNotificationsRead", &notificationv1.MarkAllNotificationsReadResponse{Marked: 1}, nil)
	resp = b.call(t, http.MethodPost, "/api/v1/notifications/read_all", `{"session_id": 13}`)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Equal(t, json.Number("1"), resp.json(t)["marked"])
	require.True(t, proto.Equal(&notificationv1.MarkAllNotificationsReadRequest{SessionId: 13}, b.lastNotificationRequest(t, "MarkAllNotificationsRead")))

	// The service hides the dismissed one and counts no unread.
	b.notifications.Answer("ListNotifications", &notificationv1.ListNotificationsResponse{Notifications: []*notificationv1.Notification{read}}, nil)
	resp = b.call(t, http.MethodGet, "/api/v1/notifications", "")
	require.Equal(t, http.StatusOK, resp.status)
	require.Equal(t, json.Number("0"), resp.json(t)["unread_count"])
	require.Len(t, resp.json(t)["notifications"], 1, "the dismissed one is hidden")

	b.notifications.Answer("MarkNotificationRead", nil, status.Error(codes.NotFound, "notification 99 not found; list them with GET /api/v1/notifications"))
	resp = b.call(t, http.MethodPost, "/api/v1/notifications/99/read", "")
	require.Equal(t, http.StatusNotFound, resp.status)
	require.Equal(t, "notification 99 not found; list them with GET /api/v1/notifications", resp.errorText(t))
	b.notifications.Answer("ListNotifications", nil, grpcstatus.InvalidArgument(validation.Invalid("page_size", "is 501; use 1 to 500 (0: 50)")))
	resp = b.call(t, http.MethodGet, "/api/v1/notifications?page_size=501", "")
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, "the service's rule: 422")
	resp = b.call(t, http.MethodGet, "/api/v1/notifications?page_size=many", "")
	require.Equal(t, http.StatusBadRequest, resp.status, "a parameter that does not parse: 400")
	resp = b.do(t, http.MethodGet, "/api/v1/notifications", "")
	require.Equal(t, http.StatusUnauthorized, resp.status, "no key")
}

func TestAlertsOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.notifications.Answer("ListAlerts", &notificationv1.ListAlertsResponse{Alerts: []*notificationv1.Alert{
		notificationfake.Alert(4, "cleanup_running_job", "cleanup failed", 3),
	}}, nil)

	resp := b.call(t, http.MethodGet, "/api/v1/alerts?page_size=10", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	alerts := resp.json(t)["alerts"].([]any)
	require.Len(t, alerts, 1)
	alert := alerts[0].(map[string]any)
	require.Equal(t, json.Number("3"), alert["occurrences"], "the repeat count")
	require.Equal(t, "cleanup_running_job", alert["dedup_key"])
	require.Equal(t, "2026-01-02T03:04:05Z", alert["first_seen_at"])
	require.True(t, proto.Equal(&notificationv1.ListAlertsRequest{PageSize: 10}, b.lastNotificationRequest(t, "ListAlerts")))
}

// A session credential reads the alerts with its sessions.read scope and
// pushes as its own session; the inbox is the operator's. The gateway
// forwards its principal and the notification service's access classes
// decide (the fake runs behind the real authorizer).
func TestASessionCredentialOverTheNotificationRoutes(t *testing.T) {
	t.Parallel()
	const token = "zsc_notificationroutes0123456789"
	for _, tc := range []struct {
		scopes []string
		alerts int
	}{
		{[]string{principal.ScopeSelf, principal.ScopeSessionsRead}, http.StatusOK},
		{[]string{principal.ScopeSelf}, http.StatusForbidden},
	} {
		b := setup(t, setupOpts{})
		b.fake.Answer("AuthenticateSessionCredential", &lifecyclev1.AuthenticateSessionCredentialResponse{Credential: &lifecyclev1.SessionCredential{
			Id: "0b5f6c1e-8d52-4a57-9f0e-2b7c3a1d4e5f", SessionId: 7, Scopes: tc.scopes,
		}}, nil)
		as := func(method, path, body string) response {
			return b.do(t, method, path, body, "Authorization", "Bearer "+token)
		}

		resp := as(http.MethodGet, "/api/v1/alerts", "")
		require.Equal(t, tc.alerts, resp.status, "%v: %s", tc.scopes, resp.body)
		resp = as(http.MethodGet, "/api/v1/notifications", "")
		require.Equal(t, http.StatusForbidden, resp.status, "%v: %s", tc.scopes, resp.body)
		require.Contains(t, resp.errorText(t), "is not open to session credentials; it needs an operator key")
		resp = as(http.MethodPost, "/api/v1/notifications/read_all", "{}")
		require.Equal(t, http.StatusForbidden, resp.status, "%v: %s", tc.scopes, resp.body)
		require.Empty(t, b.notifications.Calls("ListNotifications", "MarkAllNotificationsRead"), "refused before the fake answered")
	}
}

// push_notifications is set at creation and by PATCH, as lifecycle's
// request fields.
func TestPushNotificationsOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})

	b.create(t, `{"prompt": "p", "git_root": "/g", "push_notifications": false}`)
	require.True(t, proto.Equal(&lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "/g", PushNotifications: proto.Bool(false)},
		b.lastRequest(t, "CreateSession")))
	b.create(t, `{"prompt": "p", "git_root": "/g"}`)
	require.Nil(t, b.lastRequest(t, "CreateSession").(*lifecyclev1.CreateSessionRequest).PushNotifications, "left out: lifecycle's default")

	resp := b.call(t, http.MethodPatch, "/api/v1/sessions/1", `{"push_notifications": true}`)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.True(t, proto.Equal(&lifecyclev1.UpdateSessionRequest{SessionId: "1", PushNotifications: proto.Bool(true)}, b.lastRequest(t, "UpdateSession")))

	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 1, Status: "waiting", PushNotifications: true}}, nil)
	resp = b.call(t, http.MethodGet, "/api/v1/sessions/1", "")
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.Equal(t, true, resp.json(t)["session"].(map[string]any)["push_notifications"])
}
