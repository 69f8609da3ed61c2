package mcp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/auth"
	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	"github.com/zimmerhq/zimmer/gateway/internal/notificationfake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

type notificationBundle struct {
	*testBundle
	notifications *notificationfake.Server
}

// setupNotifications serves the MCP handler in front of the fake lifecycle
// and notification services, as the gateway does for a request that
// authenticated as p (nil: an operator key), its calls forwarding p behind
// the real authorizer.
func setupNotifications(t *testing.T, p *principal.Principal) *notificationBundle {
	t.Helper()
	fake, notifications := lifecyclefake.New(), notificationfake.New()
	dial := func(addr string) *grpc.ClientConn {
		conn, err := grpcclient.Dial(addr, grpcclient.AsService("gateway", grpctest.InternalToken), grpc.WithChainUnaryInterceptor(auth.ForwardPrincipal))
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	h := mcp.NewHandler(lifecyclev1.NewLifecycleServiceClient(dial(grpctest.Serve(t, fake.Register))), slogx.Discard(), mcp.Options{
		Version: "test", Notifications: notificationv1.NewNotificationServiceClient(dial(grpctest.Serve(t, notifications.Register))),
	})
	caller := principal.Principal{Kind: principal.Operator, KeyHint: "0123"}
	if p != nil {
		caller = *p
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), caller)))
	}))
	t.Cleanup(ts.Close)
	return &notificationBundle{testBundle: &testBundle{url: ts.URL, fake: fake}, notifications: notifications}
}

// lastNotificationRequest is the notification fake's last request of method.
func (b *notificationBundle) lastNotificationRequest(t *testing.T, method string) proto.Message {
	t.Helper()
	calls := b.notifications.Calls(method)
	require.NotEmpty(t, calls, "no %s call reached the notification service", method)
	return calls[len(calls)-1].Request
}

// answerSlug makes lifecycle resolve the slug "flaky" to session #12.
func (b *notificationBundle) answerSlug() {
	b.fake.Handle("GetSession", func(m proto.Message) (proto.Message, error) {
		if ref := m.(*lifecyclev1.GetSessionRequest).GetSessionId(); ref != "flaky" && ref != "12" {
			return nil, notFound(`"` + ref + `"`)
		}
		return &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 12, Slug: "flaky", Status: "needs_input"}}, nil
	})
}

func TestGetNotificationsListsTheInboxWithItsFilters(t *testing.T) {
	t.Parallel()
	b := setupNotifications(t, nil)
	b.answerSlug()
	c := b.connect(t, "/?tool_groups=notifications")
	first := notificationfake.Notification(1, "needs_input", 12, "#12 needs input")
	first.Body, first.Marker = "Fix the flaky test\nwaits", 3
	second := notificationfake.Notification(2, "failure", 13, "#13 failed")
	second.Read = true
	b.notifications.Answer("ListNotifications", &notificationv1.ListNotificationsResponse{
		UnreadCount: 1, Notifications: []*notificationv1.Notification{second, first},
	}, nil)

	res := call(t, c, "get_notifications", map[string]any{})
	require.False(t, res.IsError, textOf(res))
	text := textOf(res)
	require.True(t, strings.HasPrefix(requireShape(t, res, mcp.OutcomeNotifications), "\nNewest first:\n\n"+
		"- #2 [failure] session #13 — #13 failed, 2026-01-02T03:04:05Z\n"+
		"- #1 [needs_input] session #12 — #12 needs input (unread), 2026-01-02T03:04:05Z\n  Fix the flaky test waits\n\n```json\n"), text)
	require.True(t, strings.HasPrefix(text, "## Notifications\n\n- **unread_count:** 1\n- **listed:** 2\n"), text)
	require.Contains(t, text, `"unread_count":1`, "the JSON is REST's")

	// The filters reach the service as given; a slug is resolved through
	// lifecycle to the id the service takes.
	b.notifications.Answer("ListNotifications", &notificationv1.ListNotificationsResponse{
		UnreadCount: 1, Notifications: []*notificationv1.Notification{first},
	}, nil)
	for _, ref := range []any{"flaky", 12, "12"} {
		res = call(t, c, "get_notifications", map[string]any{"unread": true, "type": "needs_input", "session_id": ref, "page_size": 1})
		require.False(t, res.IsError, textOf(res))
		require.True(t, proto.Equal(&notificationv1.ListNotificationsRequest{Unread: true, Type: "needs_input", SessionId: 12, PageSize: 1},
			b.lastNotificationRequest(t, "ListNotifications")), "%v", ref)
		require.Contains(t, textOf(res), "- #1 [needs_input] session #12")
	}
	b.notifications.Answer("ListNotifications", &notificationv1.ListNotificationsResponse{
		UnreadCount: 1, Notifications: []*notificationv1.Notification{second}, NextPageToken: "1",
	}, nil)
	res = call(t, c, "get_notifications", map[string]any{"page_size": 1})
	require.Contains(t, textOf(res), `More: call get_notifications again with page_token "1".`)

	before := len(b.notifications.Calls())
	res = call(t, c, "get_notifications", map[string]any{"session_id": "nope"})
	require.True(t, res.IsError)
	require.Equal(t, `session "nope" not found; check the id or slug (GET /api/v1/sessions lists sessions)`, textOf(res))
	res = call(t, c, "get_notifications", map[string]any{"unread": "yes", "sessions": 1})
	require.True(t, res.IsError)
	require.Equal(t, `invalid arguments: unknown argument "sessions" (accepted: unread, type, session_id, include_dismissed, page_size, page_token); `+
		"unread must be true or false", textOf(res))
	require.Len(t, b.notifications.Calls(), before, "refused before the service was called")
}

func TestActionNotificationReadsDismissesAndReadsAll(t *testing.T) {
	t.Parallel()
	b := setupNotifications(t, nil)
	b.answerSlug()
	c := b.connect(t, "/?tool_groups=notifications")
	first := notificationfake.Notification(1, "needs_input", 12, "#12 needs input")
	b.notifications.Answer("MarkNotificationRead", &notificationv1.MarkNotificationReadResponse{Notification: notificationfake.Read(proto.CloneOf(first))}, nil)
	b.notifications.Answer("DismissNotification", &notificationv1.DismissNotificationResponse{
		Notification: notificationfake.Dismissed(notificationfake.Notification(2, "agent_message", 13, "done")),
	}, nil)

	res := call(t, c, "action_notification", map[string]any{"action": "read", "notification_id": first.GetId()})
	require.False(t, res.IsError, textOf(res))
	requireShape(t, res, mcp.OutcomeNotificationRead)
	require.True(t, strings.HasPrefix(textOf(res), "## Notification read\n\n- **id:** 1\n- **type:** needs_input\n- **session_id:** 12\n"+
		"- **title:** #12 needs input\n- **read:** true\n- **dismissed:** false\n- **created_at:** 2026-01-02T03:04:05Z\n"), textOf(res))
	res = call(t, c, "action_notification", map[string]any{"action": "dismiss", "notification_id": 2})
	require.False(t, res.IsError, textOf(res))
	requireShape(t, res, mcp.OutcomeNotificationGone)
	require.Contains(t, textOf(res), "- **id:** 2\n- **type:** agent_message\n- **session_id:** 13\n- **title:** done\n- **read:** false\n- **dismissed:** true\n")
	res = call(t, c, "action_notification", map[string]any{"action": "read_all", "session_id": "flaky"})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeNotificationsRead), "Marked 0 of session #12's unread notifications read.")
	require.True(t, proto.Equal(&notificationv1.MarkAllNotificationsReadRequest{SessionId: 12}, b.lastNotificationRequest(t, "MarkAllNotificationsRead")))
	b.notifications.Answer("MarkAllNotificationsRead", &notificationv1.MarkAllNotificationsReadResponse{Marked: 1}, nil)
	res = call(t, c, "action_notification", map[string]any{"action": "read_all"})
	require.Contains(t, textOf(res), "Marked 1 of every session's unread notifications read.")

	b.notifications.Answer("MarkNotificationRead", nil, status.Error(codes.NotFound, "notification 99 not found; list them with GET /api/v1/notifications"))
	res = call(t, c, "action_notification", map[string]any{"action": "read", "notification_id": 99})
	require.True(t, res.IsError)
	require.Equal(t, "notification 99 not found; list them with GET /api/v1/notifications", textOf(res), "the service's words")

	before := len(b.notifications.Calls())
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"notification_id": 1}, "action is required; use one of read, dismiss, read_all"},
		{map[string]any{"action": "delete", "notification_id": 1}, `unknown action "delete"; use one of read, dismiss, read_all`},
		{map[string]any{"action": "read"}, "invalid arguments: read needs notification_id (get_notifications lists them)"},
		{map[string]any{"action": "dismiss", "notification_id": 1, "session_id": 12},
			`invalid arguments: argument "session_id" is not read by action dismiss (it reads notification_id)`},
	} {
		res := call(t, c, "action_notification", tc.args)
		require.True(t, res.IsError)
		require.Equal(t, tc.want, textOf(res))
	}
	require.Len(t, b.notifications.Calls(), before, "refused before the service was called")
}

func TestSendPushNotification(t *testing.T) {
	t.Parallel()

	t.Run("an operator names the session, by id or slug", func(t *testing.T) {
		t.Parallel()
		b := setupNotifications(t, nil)
		b.answerSlug()
		c := b.connect(t, "/?tool_groups=notifications")
		b.notifications.Answer("SendPushNotification", &notificationv1.SendPushNotificationResponse{
			Notification: notificationfake.Notification(1, "agent_message", 12, "Deploy is done"),
		}, nil)
		res := call(t, c, "send_push_notification", map[string]any{"title": "Deploy is done", "body": "all green", "session_id": "flaky"})
		require.False(t, res.IsError, textOf(res))
		requireShape(t, res, mcp.OutcomePushSent)
		require.True(t, strings.HasPrefix(textOf(res), "## Push notification sent\n\n- **id:** 1\n- **type:** agent_message\n- **session_id:** 12\n"), textOf(res))
		require.True(t, proto.Equal(&notificationv1.SendPushNotificationRequest{Title: "Deploy is done", Body: "all green", SessionId: 12},
			b.lastNotificationRequest(t, "SendPushNotification")))

		b.notifications.Answer("SendPushNotification", nil, grpcstatus.InvalidArgument(validation.Invalid("title", "is longer than 200 characters")))
		res = call(t, c, "send_push_notification", map[string]any{"title": strings.Repeat("t", 201)})
		require.True(t, res.IsError)
		require.Equal(t, "title: is longer than 200 characters", textOf(res), "the service's validation, field named")
		b.notifications.Answer("SendPushNotification", nil, grpcstatus.InvalidArgument(validation.Invalid("title", "is required: one line the operator reads first")))
		res = call(t, c, "send_push_notification", map[string]any{"body": "no title"})
		require.True(t, res.IsError)
		require.Equal(t, "title: is required: one line the operator reads first", textOf(res))
	})

	t.Run("a session credential sends as its own session", func(t *testing.T) {
		t.Parallel()
		p := credential(7, principal.ScopeSelf)
		b := setupNotifications(t, &p)
		c := b.connect(t, "/")
		b.notifications.Answer("SendPushNotification", &notificationv1.SendPushNotificationResponse{ // as the credential's session
			Notification: notificationfake.Notification(1, "agent_message", 7, "blocked on review"),
		}, nil)
		for _, args := range []map[string]any{{"title": "blocked on review"}, {"title": "blocked on review", "session_id": 7}} {
			res := call(t, c, "send_push_notification", args)
			require.False(t, res.IsError, textOf(res))
			require.Contains(t, textOf(res), "- **session_id:** 7\n")
			got := b.notifications.Calls("SendPushNotification")
			last := got[len(got)-1]
			require.True(t, proto.Equal(&notificationv1.SendPushNotificationRequest{Title: "blocked on review", SessionId: 7}, last.Request))
			require.Equal(t, principal.Session, last.Principal.Kind, "the credential's principal reaches the service")
			require.EqualValues(t, 7, last.Principal.SessionID)
		}

		before := len(b.notifications.Calls())
		res := call(t, c, "send_push_notification", map[string]any{"title": "x", "session_id": 8})
		require.True(t, res.IsError)
		require.Equal(t, "session_id 8 is not your session: this credential sends as session #7; leave session_id out", textOf(res))
		require.Len(t, b.notifications.Calls(), before)
	})
}

func TestGetAlertsShowsRepeatCounts(t *testing.T) {
	t.Parallel()
	b := setupNotifications(t, nil)
	c := b.connect(t, "/?tool_groups=sessions")
	res := call(t, c, "get_alerts", map[string]any{})
	require.False(t, res.IsError, textOf(res))
	require.True(t, strings.HasPrefix(requireShape(t, res, mcp.OutcomeAlerts), "\nNo alerts.\n\n```json\n{\"alerts\":[]}"), textOf(res))

	b.notifications.Answer("ListAlerts", &notificationv1.ListAlertsResponse{Alerts: []*notificationv1.Alert{
		notificationfake.Alert(4, "cleanup_running_job", "cleanup failed\nfor #12", 3),
	}}, nil)
	res = call(t, c, "get_alerts", map[string]any{"page_size": 10})
	require.False(t, res.IsError, textOf(res))
	require.True(t, strings.HasPrefix(requireShape(t, res, mcp.OutcomeAlerts), "\nNewest first:\n\n"+
		"- #4 `cleanup_running_job` ×3 — cleanup failed for #12 (first 2026-01-02T03:04:05Z, last 2026-01-02T03:04:05Z)\n\n```json\n"), textOf(res))
	require.Contains(t, textOf(res), `"occurrences":3`)
	require.True(t, proto.Equal(&notificationv1.ListAlertsRequest{PageSize: 10}, b.lastNotificationRequest(t, "ListAlerts")))

	b.notifications.Answer("ListAlerts", nil, grpcstatus.InvalidArgument(validation.Invalid("page_size", "is 501; use 1 to 500 (0: 50)")))
	res = call(t, c, "get_alerts", map[string]any{"page_size": 501})
	require.True(t, res.IsError)
	require.Equal(t, "page_size: is 501; use 1 to 500 (0: 50)", textOf(res))
}

// A gateway without the notification service says so from every
// notification tool.
func TestNotificationToolsWithoutTheService(t *testing.T) {
	t.Parallel()
	c := setup(t).connect(t, "/")
	for name, args := range map[string]map[string]any{
		"get_notifications":      {},
		"action_notification":    {"action": "read_all"},
		"send_push_notification": {"title": "t"},
		"get_alerts":             {},
	} {
		res := call(t, c, name, args)
		require.True(t, res.IsError, name)
		require.Equal(t, "the notification service is not configured on this gateway", textOf(res), name)
	}
}

// push_notifications is set at start_session and by action_session's
// update_push_notifications, an operator's action only.
func TestPushNotificationsOptInOverMCP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.connect(t, "/?tool_groups=sessions")

	b.fake.Answer("CreateSession", &lifecyclev1.CreateSessionResponse{Session: &lifecyclev1.Session{Id: 3, Status: "waiting"}}, nil)
	res := call(t, c, "start_session", map[string]any{"prompt": "p", "git_root": "/g", "push_notifications": false})
	require.False(t, res.IsError, textOf(res))
	require.True(t, proto.Equal(&lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "/g", PushNotifications: proto.Bool(false)}, lastCall(t, b.fake).Request))
	res = call(t, c, "start_session", map[string]any{"prompt": "p", "git_root": "/g"})
	require.False(t, res.IsError, textOf(res))
	require.Nil(t, lastCall(t, b.fake).Request.(*lifecyclev1.CreateSessionRequest).PushNotifications, "left out: lifecycle's default (on)")

	b.fake.Answer("UpdateSession", &lifecyclev1.UpdateSessionResponse{Session: &lifecyclev1.Session{Id: 3, Status: "waiting"}}, nil)
	res = call(t, c, "action_session", map[string]any{"action": "update_push_notifications", "session_id": 3, "push_notifications": false})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomePushSet), "\nSession 3: push notifications off (a failure is still pushed).\n")
	require.True(t, proto.Equal(&lifecyclev1.UpdateSessionRequest{SessionId: "3", PushNotifications: proto.Bool(false)}, lastCall(t, b.fake).Request))
	b.fake.Answer("UpdateSession", &lifecyclev1.UpdateSessionResponse{Session: &lifecyclev1.Session{Id: 3, Status: "waiting", PushNotifications: true}}, nil)
	res = call(t, c, "action_session", map[string]any{"action": "update_push_notifications", "session_id": 3, "push_notifications": true})
	require.Contains(t, textOf(res), "Session 3: push notifications on (the operator is pushed when it waits for input).")

	before := len(b.fake.Calls())
	res = call(t, c, "action_session", map[string]any{"action": "update_push_notifications", "session_id": 3})
	require.True(t, res.IsError)
	require.Equal(t, "invalid arguments: update_push_notifications needs push_notifications (true or false)", textOf(res))
	res = call(t, b.connect(t, "/?tool_groups=self_session"), "action_session",
		map[string]any{"action": "update_push_notifications", "session_id": 3, "push_notifications": false})
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), `action "update_push_notifications" is not available on the self-session MCP server`)
	require.Len(t, b.fake.Calls(), before, "refused before lifecycle was called")
}
