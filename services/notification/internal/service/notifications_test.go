package service_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/notification/internal/push"
	"github.com/zimmerhq/zimmer/services/notification/internal/service"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// ownWorker names a task queue of the test's own, so tests sharing one
// Temporal server never run each other's workflows and activities.
func ownWorker() string { return "notificationtest-" + uuid.NewString()[:8] }

// fakeLifecycle answers GetSession from what the test set.
type fakeLifecycle struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	mu       sync.Mutex
	sessions map[int64]*lifecyclev1.Session
	// asked is when each session was first asked about (the benchmark's
	// end of the debounce).
	asked map[int64]time.Time
}

func (f *fakeLifecycle) set(s *lifecyclev1.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sessions == nil {
		f.sessions = map[int64]*lifecyclev1.Session{}
	}
	f.sessions[s.GetId()] = s
}

func (f *fakeLifecycle) GetSession(_ context.Context, req *lifecyclev1.GetSessionRequest) (*lifecyclev1.GetSessionResponse, error) {
	id, err := strconv.ParseInt(req.GetSessionId(), 10, 64)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "want a numeric id, got %q", req.GetSessionId())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.asked == nil {
		f.asked = map[int64]time.Time{}
	}
	if _, ok := f.asked[id]; !ok {
		f.asked[id] = time.Now()
	}
	s, ok := f.sessions[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no session %d", id)
	}
	return &lifecyclev1.GetSessionResponse{Session: s}, nil
}

// startLifecycle serves f on a free port and returns its address.
func startLifecycle(t *testing.T, f *fakeLifecycle) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	lifecyclev1.RegisterLifecycleServiceServer(g, f)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

// effect is lifecycle's event carrying the effect e about s.
func effect(e *lifecyclev1.SessionEffect, s *lifecyclev1.Session) *lifecyclev1.ConsumeSessionEventRequest {
	e.Session = s
	return &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
		EventId:    uuid.NewString(),
		SessionId:  s.GetId(),
		OccurredAt: timestamppb.Now(),
		Payload:    &lifecyclev1.SessionEvent_Effect{Effect: e},
	}}
}

// The effects lifecycle sends, as its events carry them.
func needsInputPush(count int64) *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_NeedsInputPush{
		NeedsInputPush: &lifecyclev1.NeedsInputPushEffect{NeedsInputCount: count}}}
}

func failurePush(reason string) *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_FailurePush{
		FailurePush: &lifecyclev1.FailurePushEffect{FailureReason: reason}}}
}

func markStale() *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_MarkNotificationsStale{
		MarkNotificationsStale: &lifecyclev1.MarkNotificationsStaleEffect{}}}
}

func dismiss() *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_DismissNotifications{
		DismissNotifications: &lifecyclev1.DismissNotificationsEffect{}}}
}

// drain is the queue's effect, which notification does not own.
func drain() *lifecyclev1.SessionEffect {
	return &lifecyclev1.SessionEffect{Kind: &lifecyclev1.SessionEffect_Drain{Drain: &lifecyclev1.DrainEffect{}}}
}

// fieldsOf lists the fields an InvalidArgument status names.
func fieldsOf(err error) []string {
	var fields []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	return fields
}

// The component test of the inbox and the effects, without Temporal:
// lifecycle's effects over gRPC as lifecycle calls them, the inbox as an
// operator reads it.
func TestNotificationsOverGRPC(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	svc, err := service.New(context.Background(), testConfig(t), slog.New(slog.NewJSONHandler(logs, nil)))
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	servicetest.RunInBackground(t, svc.Run)
	consumer := lifecyclev1.NewSessionEventConsumerServiceClient(servicetest.DialAsService(t, svc.Addr(), "lifecycle"))
	inbox := notificationv1.NewNotificationServiceClient(servicetest.DialOperator(t, svc.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), servicetest.Timeout)
	defer cancel()

	// A failure: recorded and pushed at once, whatever the session's opt-in.
	failed := &lifecyclev1.Session{Id: 42, Title: "Fix the flaky test", Status: "failed", NeedsInputCount: 2, FailureReason: "the clone is gone"}
	failure := effect(failurePush("the clone is gone"), failed)
	resp, err := consumer.ConsumeSessionEvent(ctx, failure)
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	resp, err = consumer.ConsumeSessionEvent(ctx, failure)
	require.NoError(t, err)
	require.False(t, resp.GetApplied(), "a redelivered effect creates nothing")

	list, err := inbox.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetNotifications(), 1)
	n := list.GetNotifications()[0]
	require.Equal(t, "failure", n.GetType())
	require.EqualValues(t, 42, n.GetSessionId())
	require.Equal(t, "Session 42 failed: Fix the flaky test", n.GetTitle())
	require.Contains(t, n.GetBody(), "failed and will not retry on its own: the clone is gone.")
	require.False(t, n.GetRead())
	require.EqualValues(t, 1, list.GetUnreadCount())
	require.NotNil(t, n.GetPushedAt(), "without Temporal the log is where it went")
	var pushes []map[string]any
	for _, line := range logs.lines(t) {
		if line["push"] == true {
			pushes = append(pushes, line)
		}
	}
	require.Len(t, pushes, 1, "one push, not one per delivery")
	require.Equal(t, "Session 42 failed: Fix the flaky test", pushes[0]["title"])

	// A pause's push needs the debounce, which needs Temporal: lifecycle
	// is told to retry.
	waiting := &lifecyclev1.Session{Id: 42, Status: "needs_input", NeedsInputCount: 3, PushNotifications: true}
	_, err = consumer.ConsumeSessionEvent(ctx, effect(needsInputPush(3), waiting))
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "no Temporal")

	// What notification cannot read is InvalidArgument (parked dead).
	for _, bad := range []struct {
		req   *lifecyclev1.ConsumeSessionEventRequest
		field string
	}{
		{effect(needsInputPush(0), waiting), "event.effect.needs_input_push.needs_input_count"},
		{effect(failurePush(""), &lifecyclev1.Session{Id: 42}), ""},
		{effect(markStale(), &lifecyclev1.Session{Id: 0}), "event.session_id"},
	} {
		if bad.field == "" { // a snapshot of another session
			bad.req.GetEvent().SessionId = 7
			bad.field = "event.effect.session.id"
		}
		_, err := consumer.ConsumeSessionEvent(ctx, bad.req)
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		require.Equal(t, []string{bad.field}, fieldsOf(err))
	}
	notUUID := effect(dismiss(), failed)
	notUUID.GetEvent().EventId = "evt-1"
	_, err = consumer.ConsumeSessionEvent(ctx, notUUID)
	require.Equal(t, []string{"event.event_id"}, fieldsOf(err))
	undated := effect(needsInputPush(3), waiting)
	undated.GetEvent().OccurredAt = nil
	_, err = consumer.ConsumeSessionEvent(ctx, undated)
	require.Equal(t, []string{"event.occurred_at"}, fieldsOf(err), "the debounce counts from the pause")

	// Effects notification does not own, and events that are no effect,
	// are not its to apply.
	resp, err = consumer.ConsumeSessionEvent(ctx, effect(drain(), waiting))
	require.NoError(t, err)
	require.False(t, resp.GetApplied())
	resp, err = consumer.ConsumeSessionEvent(ctx, &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
		EventId: uuid.NewString(), SessionId: 42, Payload: &lifecyclev1.SessionEvent_Updated{Updated: &lifecyclev1.SessionUpdated{Session: waiting}},
	}})
	require.NoError(t, err)
	require.False(t, resp.GetApplied())

	// Only a service consumes effects.
	_, err = lifecyclev1.NewSessionEventConsumerServiceClient(servicetest.DialOperator(t, svc.Addr())).ConsumeSessionEvent(ctx, failure)
	require.Equal(t, codes.PermissionDenied, status.Code(err))

	// The inbox: read, dismiss, read_all, filters, pages.
	for i := range 4 {
		_, err := inbox.SendPushNotification(ctx, &notificationv1.SendPushNotificationRequest{Title: fmt.Sprintf("note %d", i), SessionId: 7})
		require.NoError(t, err)
	}
	read, err := inbox.MarkNotificationRead(ctx, &notificationv1.MarkNotificationReadRequest{NotificationId: n.GetId()})
	require.NoError(t, err)
	require.True(t, read.GetNotification().GetRead())
	require.NotNil(t, read.GetNotification().GetReadAt())
	again, err := inbox.MarkNotificationRead(ctx, &notificationv1.MarkNotificationReadRequest{NotificationId: n.GetId()})
	require.NoError(t, err)
	require.Equal(t, read.GetNotification().GetReadAt().AsTime(), again.GetNotification().GetReadAt().AsTime(), "idempotent")
	_, err = inbox.MarkNotificationRead(ctx, &notificationv1.MarkNotificationReadRequest{NotificationId: 999_999})
	require.Equal(t, codes.NotFound, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "no notification has id 999999")
	_, err = inbox.DismissNotification(ctx, &notificationv1.DismissNotificationRequest{})
	require.Equal(t, []string{"notification_id"}, fieldsOf(err))

	page, err := inbox.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{PageSize: 3, Unread: true})
	require.NoError(t, err)
	require.Len(t, page.GetNotifications(), 3)
	require.EqualValues(t, 4, page.GetUnreadCount())
	require.NotEmpty(t, page.GetNextPageToken())
	rest, err := inbox.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{PageSize: 3, Unread: true, PageToken: page.GetNextPageToken()})
	require.NoError(t, err)
	require.Len(t, rest.GetNotifications(), 1)
	require.Equal(t, "note 0", rest.GetNotifications()[0].GetTitle(), "newest first: the oldest note ends the list")
	require.Empty(t, rest.GetNextPageToken())
	_, err = inbox.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{Type: "digest", PageToken: "nope"})
	require.Equal(t, []string{"type", "page_token"}, fieldsOf(err))

	dismissed, err := inbox.DismissNotification(ctx, &notificationv1.DismissNotificationRequest{NotificationId: rest.GetNotifications()[0].GetId()})
	require.NoError(t, err)
	require.True(t, dismissed.GetNotification().GetDismissed())
	marked, err := inbox.MarkAllNotificationsRead(ctx, &notificationv1.MarkAllNotificationsReadRequest{SessionId: 7})
	require.NoError(t, err)
	require.EqualValues(t, 3, marked.GetMarked(), "the dismissed note is out of view")
	all, err := inbox.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{IncludeDismissed: true})
	require.NoError(t, err)
	require.Len(t, all.GetNotifications(), 5)
	require.Zero(t, all.GetUnreadCount())

	// Archive: the session's notifications are dismissed, once.
	archive := effect(dismiss(), &lifecyclev1.Session{Id: 42, Status: "archived"})
	resp, err = consumer.ConsumeSessionEvent(ctx, archive)
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	resp, err = consumer.ConsumeSessionEvent(ctx, archive)
	require.NoError(t, err)
	require.False(t, resp.GetApplied())
	session42, err := inbox.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{SessionId: 42})
	require.NoError(t, err)
	require.Empty(t, session42.GetNotifications(), "dismissed by the archive")
}

// SendPushNotification is attributed to the calling session: a session
// credential (forwarded by the gateway) sends as its own session whatever
// the request says; a key sends as the session it names.
func TestSendPushNotificationAttribution(t *testing.T) {
	t.Parallel()
	svc := servicetest.New(t, service.New, testConfig(t))
	servicetest.RunInBackground(t, svc.Run)
	ctx, cancel := context.WithTimeout(context.Background(), servicetest.Timeout)
	defer cancel()

	operator := notificationv1.NewNotificationServiceClient(servicetest.DialOperator(t, svc.Addr()))
	sent, err := operator.SendPushNotification(ctx, &notificationv1.SendPushNotificationRequest{Title: "Deploy finished", Body: "v1.2 is live", SessionId: 5})
	require.NoError(t, err)
	n := sent.GetNotification()
	require.Equal(t, "agent_message", n.GetType())
	require.EqualValues(t, 5, n.GetSessionId(), "a key sends as the session it names")
	require.Equal(t, "Deploy finished", n.GetTitle())
	require.Equal(t, "v1.2 is live", n.GetBody())

	anonymous, err := operator.SendPushNotification(ctx, &notificationv1.SendPushNotificationRequest{Title: "Backup done"})
	require.NoError(t, err)
	require.Zero(t, anonymous.GetNotification().GetSessionId(), "about no session")

	gateway := notificationv1.NewNotificationServiceClient(servicetest.DialAsService(t, svc.Addr(), "gateway"))
	asSession := func(id int64, scopes ...string) context.Context {
		c, err := principal.Outgoing(ctx, principal.Principal{Kind: principal.Session, SessionID: id, Scopes: scopes})
		require.NoError(t, err)
		return c
	}
	self, err := gateway.SendPushNotification(asSession(12, principal.ScopeSelf),
		&notificationv1.SendPushNotificationRequest{Title: "Tests are green", SessionId: 5})
	require.NoError(t, err)
	require.EqualValues(t, 12, self.GetNotification().GetSessionId(), "a session credential sends as itself, whatever session_id says")

	_, err = gateway.SendPushNotification(asSession(12, principal.ScopeSelf), &notificationv1.SendPushNotificationRequest{Title: string(make([]rune, 201))})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = gateway.SendPushNotification(asSession(12, principal.ScopeSelf),
		&notificationv1.SendPushNotificationRequest{Title: "", Body: string(make([]byte, 4001))})
	require.Equal(t, []string{"title", "body"}, fieldsOf(err))

	// The inbox is the operator's: a session credential reads none of it.
	_, err = gateway.ListNotifications(asSession(12, principal.ScopeSelf, principal.ScopeSessionsRead), &notificationv1.ListNotificationsRequest{})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	list, err := operator.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{Type: "agent_message"})
	require.NoError(t, err)
	require.Len(t, list.GetNotifications(), 3)
}

// webhookReceiver is a real local HTTP sink: it answers each request with
// the next of its statuses (200 once they run out) and hands over the
// requests it accepted.
type webhookReceiver struct {
	*httptest.Server
	mu        sync.Mutex
	statuses  []int
	refused   int
	delivered chan webhookDelivery
}

type webhookDelivery struct {
	header http.Header
	body   []byte
	at     time.Time
}

func newWebhookReceiver(t *testing.T, statuses ...int) *webhookReceiver {
	t.Helper()
	r := &webhookReceiver{statuses: statuses, delivered: make(chan webhookDelivery, 256)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		code := http.StatusOK
		if len(r.statuses) > 0 {
			code, r.statuses = r.statuses[0], r.statuses[1:]
		}
		if code != http.StatusOK {
			r.refused++
		}
		r.mu.Unlock()
		if code != http.StatusOK {
			w.WriteHeader(code)
			return
		}
		r.delivered <- webhookDelivery{header: req.Header.Clone(), body: body, at: time.Now()}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *webhookReceiver) refusals() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused
}

// temporalService runs the service on the real Temporal dev server with
// its own task queue, lifecycle faked, a short debounce and pushes to the
// webhook.
func temporalService(t *testing.T, lifecycle *fakeLifecycle, webhook *webhookReceiver, secret string, debounce time.Duration) *service.Service {
	t.Helper()
	cfg := testConfig(t)
	cfg.TemporalAddress = servicetest.TemporalAddress(t)
	cfg.WorkerName = ownWorker()
	cfg.LifecycleAddr = startLifecycle(t, lifecycle)
	cfg.NeedsInputDebounce = debounce
	cfg.Sinks.PushRoute = []string{"webhook"}
	cfg.Sinks.WebhookURL = webhook.URL
	cfg.Sinks.WebhookSecret = secret
	svc := newTemporalService(t, cfg)
	// Notification ids start at 1 in every test database, and push/<id>
	// names a workflow on a server the tests share: start this database's
	// ids somewhere no other run's are.
	start, err := rand.Int(rand.Reader, big.NewInt(1<<50))
	require.NoError(t, err)
	_, err = svc.Pool.Exec(context.Background(), fmt.Sprintf(`ALTER TABLE notifications ALTER COLUMN id RESTART WITH %d`, start.Int64()+1))
	require.NoError(t, err)
	servicetest.RunInBackground(t, svc.Run)
	return svc
}

// testSessionID is a session id no other test or run uses, so its
// debounce workflow is this test's alone on the shared server.
func testSessionID() int64 { return time.Now().UnixNano() }

// On the real Temporal dev server: a pause's effect reaches the webhook,
// signed, one debounce later; a resume inside the window pushes nothing; a
// failure pushes at once, and a webhook refusing it at first is retried
// while the effect was long answered.
func TestPushesReachTheWebhookThroughTemporal(t *testing.T) {
	t.Parallel()
	const secret = "push-secret"
	lifecycle := &fakeLifecycle{}
	webhook := newWebhookReceiver(t)
	const debounce = 2 * time.Second
	svc := temporalService(t, lifecycle, webhook, secret, debounce)
	consumer := lifecyclev1.NewSessionEventConsumerServiceClient(servicetest.DialAsService(t, svc.Addr(), "lifecycle"))
	inbox := notificationv1.NewNotificationServiceClient(servicetest.DialOperator(t, svc.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), servicetest.Timeout)
	defer cancel()

	receive := func(what string) (webhookDelivery, sink.WebhookPayload) {
		t.Helper()
		select {
		case d := <-webhook.delivered:
			require.NoError(t, sink.VerifyWebhook([]byte(secret), d.header, d.body, time.Now(), time.Minute))
			var p sink.WebhookPayload
			require.NoError(t, json.Unmarshal(d.body, &p))
			return d, p
		case <-ctx.Done():
			t.Fatalf("the webhook never received %s", what)
			return webhookDelivery{}, sink.WebhookPayload{}
		}
	}

	// A pause: pushed a debounce later.
	waiting := &lifecyclev1.Session{Id: testSessionID(), Title: "Fix the flaky test", Status: "needs_input", NeedsInputCount: 1, PushNotifications: true}
	lifecycle.set(waiting)
	paused := time.Now()
	resp, err := consumer.ConsumeSessionEvent(ctx, effect(needsInputPush(1), waiting))
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	d, payload := receive("the needs-input push")
	require.GreaterOrEqual(t, d.at.Sub(paused), debounce, "not before the debounce")
	require.Equal(t, sink.KindPush, payload.Kind)
	require.Equal(t, fmt.Sprintf("Session %d needs your input: Fix the flaky test", waiting.GetId()), payload.Title)
	require.Equal(t, strconv.FormatInt(waiting.GetId(), 10), payload.SessionID)

	var pushed *notificationv1.Notification
	require.Eventually(t, func() bool {
		list, err := inbox.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{SessionId: waiting.GetId()})
		require.NoError(t, err)
		require.Len(t, list.GetNotifications(), 1)
		pushed = list.GetNotifications()[0]
		return pushed.GetPushedAt() != nil
	}, servicetest.Timeout, 50*time.Millisecond, "recorded as pushed")
	require.Equal(t, "needs_input", pushed.GetType())
	require.EqualValues(t, 1, pushed.GetMarker())
	require.Equal(t, fmt.Sprintf("notification/%d", pushed.GetId()), payload.DedupKey)
	var outcome push.DebounceResult
	require.NoError(t, svc.Temporal.GetWorkflow(ctx, push.DebounceWorkflowID(waiting.GetId()), "").Get(ctx, &outcome))
	require.Equal(t, pushed.GetId(), outcome.NotificationID)

	// A resume inside the window: no push. The resume's effect stales the
	// pushed notification, not the pause that follows it.
	second := &lifecyclev1.Session{Id: waiting.GetId(), Status: "needs_input", NeedsInputCount: 2, PushNotifications: true}
	lifecycle.set(second)
	_, err = consumer.ConsumeSessionEvent(ctx, effect(needsInputPush(2), second))
	require.NoError(t, err)
	resumed := &lifecyclev1.Session{Id: waiting.GetId(), Status: "running", NeedsInputCount: 2, PushNotifications: true}
	lifecycle.set(resumed)
	resp, err = consumer.ConsumeSessionEvent(ctx, effect(markStale(), resumed))
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	require.NoError(t, svc.Temporal.GetWorkflow(ctx, push.DebounceWorkflowID(waiting.GetId()), "").Get(ctx, &outcome))
	require.Contains(t, outcome.Skipped, "is running now")
	list, err := inbox.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{SessionId: waiting.GetId()})
	require.NoError(t, err)
	require.Len(t, list.GetNotifications(), 1, "the resumed pause created nothing")
	require.True(t, list.GetNotifications()[0].GetStale(), "the resume made the earlier pause's news history")

	// A failure: pushed at once, and the webhook's first refusal (503) is
	// retried; the effect was answered without waiting for any of it.
	webhook.mu.Lock()
	webhook.statuses = []int{http.StatusServiceUnavailable}
	webhook.mu.Unlock()
	failed := &lifecyclev1.Session{Id: testSessionID(), Title: "Port the parser", Status: "failed", PushNotifications: false}
	resp, err = consumer.ConsumeSessionEvent(ctx, effect(failurePush("the agent exited with status 1"), failed))
	answered := time.Now()
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	d, payload = receive("the failure push")
	require.Equal(t, 1, webhook.refusals(), "refused once, then retried")
	require.True(t, d.at.After(answered), "the effect was answered before the retried delivery: a sink never holds up a transition")
	require.Equal(t, fmt.Sprintf("Session %d failed: Port the parser", failed.GetId()), payload.Title)
	require.Contains(t, payload.Body, "the agent exited with status 1")

	// An agent's message is pushed at once, attributed to its session.
	sent, err := inbox.SendPushNotification(ctx, &notificationv1.SendPushNotificationRequest{Title: "Tests are green", SessionId: failed.GetId()})
	require.NoError(t, err)
	_, payload = receive("the agent's message")
	require.Equal(t, fmt.Sprintf("Session %d: Tests are green", failed.GetId()), payload.Title)
	require.Equal(t, fmt.Sprintf("notification/%d", sent.GetNotification().GetId()), payload.DedupKey)

	// Both pushes end (recorded pushed), having pushed once each.
	failures, err := inbox.ListNotifications(ctx, &notificationv1.ListNotificationsRequest{SessionId: failed.GetId()})
	require.NoError(t, err)
	require.Len(t, failures.GetNotifications(), 2)
	for _, n := range failures.GetNotifications() {
		require.NoError(t, svc.Temporal.GetWorkflow(ctx, fmt.Sprintf("push/%d", n.GetId()), "").Get(ctx, nil))
	}
	require.Empty(t, webhook.delivered, "each push arrived once")
}
