package notificationfake_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/notificationfake"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// Every RPC of the service is recorded, so a new RPC cannot fall through
// to Unimplemented unnoticed.
func TestEveryMethodIsRecorded(t *testing.T) {
	t.Parallel()
	fake := notificationfake.New()
	conn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))

	sd := notificationv1.File_zimmer_notification_v1_notification_service_proto.Services().ByName("NotificationService")
	methods := sd.Methods()
	newMessage := func(md protoreflect.MessageDescriptor) proto.Message {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
		require.NoError(t, err)
		return mt.New().Interface()
	}
	for i := range methods.Len() {
		m := methods.Get(i)
		err := conn.Invoke(t.Context(), "/"+string(sd.FullName())+"/"+string(m.Name()), newMessage(m.Input()), newMessage(m.Output()))
		require.NotEqual(t, codes.Unimplemented, status.Code(err), "%s: %v", m.Name(), err)
		require.Len(t, fake.Calls(string(m.Name())), 1, m.Name())
	}
	require.Len(t, fake.Calls(), methods.Len())
}

// The inbox lists newest first with its filters and unread count; read,
// dismiss and read_all change what it lists; a push is attributed to the
// calling session credential's own session whatever it names.
func TestInboxAndPushes(t *testing.T) {
	t.Parallel()
	fake := notificationfake.New()
	n := notificationv1.NewNotificationServiceClient(grpctest.DialAsService(t, grpctest.Serve(t, fake.Register)))
	ctx := t.Context()

	first := fake.Add(&notificationv1.Notification{Type: "needs_input", SessionId: 1, Title: "#1 needs input", Marker: 1})
	second := fake.Add(&notificationv1.Notification{Type: "failure", SessionId: 2, Title: "#2 failed"})
	list := func(req *notificationv1.ListNotificationsRequest) (ids []int64, unread int32) {
		t.Helper()
		resp, err := n.ListNotifications(ctx, req)
		require.NoError(t, err)
		for _, x := range resp.GetNotifications() {
			ids = append(ids, x.GetId())
		}
		return ids, resp.GetUnreadCount()
	}
	ids, unread := list(&notificationv1.ListNotificationsRequest{})
	require.Equal(t, []int64{second.GetId(), first.GetId()}, ids, "newest first")
	require.EqualValues(t, 2, unread)
	ids, _ = list(&notificationv1.ListNotificationsRequest{Type: "needs_input"})
	require.Equal(t, []int64{first.GetId()}, ids)
	ids, _ = list(&notificationv1.ListNotificationsRequest{SessionId: 2})
	require.Equal(t, []int64{second.GetId()}, ids)

	page, err := n.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{PageSize: 1})
	require.NoError(t, err)
	require.Len(t, page.GetNotifications(), 1)
	next, err := n.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{PageSize: 1, PageToken: page.GetNextPageToken()})
	require.NoError(t, err)
	require.Equal(t, first.GetId(), next.GetNotifications()[0].GetId())
	require.Empty(t, next.GetNextPageToken())

	read, err := n.MarkNotificationRead(ctx, &notificationv1.MarkNotificationReadRequest{NotificationId: first.GetId()})
	require.NoError(t, err)
	require.True(t, read.GetNotification().GetRead())
	ids, unread = list(&notificationv1.ListNotificationsRequest{Unread: true})
	require.Equal(t, []int64{second.GetId()}, ids)
	require.EqualValues(t, 1, unread)

	_, err = n.DismissNotification(ctx, &notificationv1.DismissNotificationRequest{NotificationId: second.GetId()})
	require.NoError(t, err)
	ids, unread = list(&notificationv1.ListNotificationsRequest{})
	require.Equal(t, []int64{first.GetId()}, ids, "dismissed ones are hidden by default")
	require.Zero(t, unread)
	ids, _ = list(&notificationv1.ListNotificationsRequest{IncludeDismissed: true})
	require.Len(t, ids, 2)

	_, err = n.MarkNotificationRead(ctx, &notificationv1.MarkNotificationReadRequest{NotificationId: 99})
	require.Equal(t, codes.NotFound, status.Code(err))

	// A session credential's push is its session's, whatever it names.
	asSession, err := principal.Outgoing(context.Background(), principal.Principal{Kind: principal.Session, SessionID: 7, Scopes: []string{principal.ScopeSelf}})
	require.NoError(t, err)
	pushed, err := n.SendPushNotification(asSession, &notificationv1.SendPushNotificationRequest{Title: "done", SessionId: 3})
	require.NoError(t, err)
	require.EqualValues(t, 7, pushed.GetNotification().GetSessionId())
	require.Equal(t, "agent_message", pushed.GetNotification().GetType())
	_, err = n.SendPushNotification(ctx, &notificationv1.SendPushNotificationRequest{})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "a push needs a title")

	all, err := n.MarkAllNotificationsRead(ctx, &notificationv1.MarkAllNotificationsReadRequest{})
	require.NoError(t, err)
	require.EqualValues(t, 2, all.GetMarked(), "the dismissed failure and the push; the needs-input one was read")

	fake.SetAlerts(&notificationv1.Alert{Id: 1, DedupKey: "k", Occurrences: 3})
	alerts, err := n.ListAlerts(ctx, &notificationv1.ListAlertsRequest{})
	require.NoError(t, err)
	require.EqualValues(t, 3, alerts.GetAlerts()[0].GetOccurrences())
}
