package console_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/console"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

// pageFakes are the parts of the session page beyond its header, the
// inbox and the alerts, as the fakes hold them, and what they were asked.
type pageFakes struct {
	hierarchy     *lineagev1.SessionHierarchy
	queue         []*queuev1.EnqueuedMessage
	timeline      []*lifecyclev1.TimelineLine
	clone         *runnerv1.Clone
	triggers      []*lifecyclev1.Trigger
	notifications []*notificationv1.Notification
	alerts        []*notificationv1.Alert
	// calls are the requests of the actions, in order.
	calls []proto.Message
	// follow feeds FollowTranscript; follows are its requests.
	follow  chan *runnerv1.TranscriptLine
	follows []*runnerv1.FollowTranscriptRequest
	// refuse makes the next action of that method fail with that error.
	refuse map[string]error
	// restartKeys are the idempotency keys RestartSession applied.
	restartKeys map[string]bool
}

func newPageFakes() pageFakes {
	ts := timestamppb.New(time.Date(2030, 4, 15, 13, 30, 0, 0, time.UTC))
	details, _ := structpb.NewStruct(map[string]any{"error": hostile})
	return pageFakes{
		hierarchy: &lineagev1.SessionHierarchy{OriginSessionId: 5, RootSessionIds: []int64{5}, Nodes: []*lineagev1.HierarchyNode{
			{Id: 5, Label: "The router " + hostile, AgentRoot: "zimmer-router " + hostile, Status: "running", Depth: 0, Genesis: "web_ui", SchedulingClass: "priority"},
			{Id: 7, Label: "This one", AgentRoot: "zimmer", Status: "needs_input", Depth: 1, Current: true, Genesis: "web_ui", SchedulingClass: "priority"},
			{Id: 9, Label: "A helper", AgentRoot: "zimmer", Status: "waiting", Depth: 2, Genesis: "web_ui", SchedulingClass: "spot", UncleSessionIds: []int64{11}},
			{Id: 8, Label: "A sibling", AgentRoot: "zimmer", Status: "failed", Depth: 1, Genesis: "web_ui", SchedulingClass: "priority"},
		}},
		queue: []*queuev1.EnqueuedMessage{
			{Id: 31, SessionId: 7, Position: 1, Status: "pending", Origin: "caller", Content: "first " + hostile, CreatedAt: ts},
			{Id: 32, SessionId: 7, Position: 2, Status: "pending", Origin: "caller", Content: "second", CreatedAt: ts},
			{Id: 30, SessionId: 7, Status: "undelivered", Origin: "caller", Content: "lost one", UndeliveredReason: "its session was archived", CreatedAt: ts},
		},
		timeline: []*lifecyclev1.TimelineLine{{Id: 1, Kind: "transition", Message: "[State Machine] started " + hostile, CreatedAt: ts}},
		clone: &runnerv1.Clone{SessionId: 7, Node: "node-a", Path: "/work/7", State: "preserved", GitRoot: "/repo", Note: hostile,
			TrashAfter: ts, Artifacts: &runnerv1.PreservedArtifacts{Dir: "/keep/7", BundlePath: "/keep/7/unpushed.bundle", BundleBytes: 2048,
				PatchPath: "/keep/7/working_tree.patch", PatchBytes: 10, Head: "abc123", HeadBranch: "main"}},
		triggers: []*lifecyclev1.Trigger{
			{Id: 41, SessionId: 7, Kind: "one_time", FireAt: ts, Timezone: "America/New_York", Source: "pause_until", Prompt: hostile, CreatedAt: ts},
			{Id: 42, SessionId: 7, Kind: "session_state", WatchedSessionId: 9, States: []string{"needs_input", "failed"}, Source: "watch", CreatedAt: ts},
		},
		notifications: []*notificationv1.Notification{
			{Id: 51, Type: "agent_message", SessionId: 7, Title: "PR ready " + hostile, Body: hostile, CreatedAt: ts},
			{Id: 52, Type: "failure", SessionId: 8, Title: "Session #8 failed", Read: true, CreatedAt: ts},
		},
		alerts: []*notificationv1.Alert{{Id: 61, DedupKey: "cleanup_running_job", Summary: "a callback failed " + hostile, Details: details,
			Occurrences: 3, FirstSeenAt: ts, LastSeenAt: timestamppb.New(ts.AsTime().Add(time.Minute)), DedupUntil: timestamppb.New(ts.AsTime().Add(time.Hour))}},
		follow:      make(chan *runnerv1.TranscriptLine, 10),
		refuse:      map[string]error{},
		restartKeys: map[string]bool{},
	}
}

// record notes an action's request and answers the refusal set for its
// method, if any.
func (f *fakes) record(method string, req proto.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.page.calls = append(f.page.calls, req)
	if err := f.page.refuse[method]; err != nil {
		delete(f.page.refuse, method)
		return err
	}
	return nil
}

func (b testBundle) calls() []proto.Message {
	b.fakes.mu.Lock()
	defer b.fakes.mu.Unlock()
	return append([]proto.Message(nil), b.fakes.page.calls...)
}

func (b testBundle) refuseNext(method string, err error) {
	b.fakes.mu.Lock()
	defer b.fakes.mu.Unlock()
	b.fakes.page.refuse[method] = err
}

func (b testBundle) setStatus(s string) {
	b.fakes.mu.Lock()
	defer b.fakes.mu.Unlock()
	b.fakes.session.Status = s
}

func (l fakeLifecycle) GetSessionTimeline(context.Context, *lifecyclev1.GetSessionTimelineRequest, ...grpc.CallOption) (*lifecyclev1.GetSessionTimelineResponse, error) {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	return &lifecyclev1.GetSessionTimelineResponse{Timeline: l.f.page.timeline}, nil
}

func (l fakeLifecycle) UpdateSession(_ context.Context, in *lifecyclev1.UpdateSessionRequest, _ ...grpc.CallOption) (*lifecyclev1.UpdateSessionResponse, error) {
	if err := l.f.record("UpdateSession", in); err != nil {
		return nil, err
	}
	return &lifecyclev1.UpdateSessionResponse{}, nil
}

func (l fakeLifecycle) RestartSession(_ context.Context, in *lifecyclev1.RestartSessionRequest, _ ...grpc.CallOption) (*lifecyclev1.RestartSessionResponse, error) {
	if err := l.f.record("RestartSession", in); err != nil {
		return nil, err
	}
	// Lifecycle's contract (LC-25): a key it applied is answered, not applied.
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	if key := in.GetIdempotencyKey(); key != "" {
		if l.f.page.restartKeys[key] {
			return &lifecyclev1.RestartSessionResponse{Message: "Session 7: already applied (from needs_input); it is running now.", AlreadyApplied: true}, nil
		}
		l.f.page.restartKeys[key] = true
	}
	return &lifecyclev1.RestartSessionResponse{Message: "Session #7 restarted."}, nil
}

func (l fakeLifecycle) UnarchiveSession(_ context.Context, in *lifecyclev1.UnarchiveSessionRequest, _ ...grpc.CallOption) (*lifecyclev1.UnarchiveSessionResponse, error) {
	if err := l.f.record("UnarchiveSession", in); err != nil {
		return nil, err
	}
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	l.f.session.Status = "needs_input"
	return &lifecyclev1.UnarchiveSessionResponse{Message: "Session #7 restored."}, nil
}

func (q fakeQueue) ListEnqueuedMessages(context.Context, *queuev1.ListEnqueuedMessagesRequest, ...grpc.CallOption) (*queuev1.ListEnqueuedMessagesResponse, error) {
	q.f.mu.Lock()
	defer q.f.mu.Unlock()
	return &queuev1.ListEnqueuedMessagesResponse{EnqueuedMessages: q.f.page.queue,
		Pagination: &queuev1.Pagination{TotalCount: int64(len(q.f.page.queue))}}, nil
}

func (q fakeQueue) SendEnqueuedMessageNow(_ context.Context, in *queuev1.SendEnqueuedMessageNowRequest, _ ...grpc.CallOption) (*queuev1.SendEnqueuedMessageNowResponse, error) {
	if err := q.f.record("SendEnqueuedMessageNow", in); err != nil {
		return nil, err
	}
	return &queuev1.SendEnqueuedMessageNowResponse{Delivered: true, Message: "Message 31 delivered as the next turn."}, nil
}

func (q fakeQueue) InterruptWithEnqueuedMessage(_ context.Context, in *queuev1.InterruptWithEnqueuedMessageRequest, _ ...grpc.CallOption) (*queuev1.InterruptWithEnqueuedMessageResponse, error) {
	if err := q.f.record("InterruptWithEnqueuedMessage", in); err != nil {
		return nil, err
	}
	return &queuev1.InterruptWithEnqueuedMessageResponse{Interrupted: true, Message: "The running turn was stopped; message 32 is the next turn."}, nil
}

func (q fakeQueue) UpdateEnqueuedMessage(_ context.Context, in *queuev1.UpdateEnqueuedMessageRequest, _ ...grpc.CallOption) (*queuev1.UpdateEnqueuedMessageResponse, error) {
	if err := q.f.record("UpdateEnqueuedMessage", in); err != nil {
		return nil, err
	}
	return &queuev1.UpdateEnqueuedMessageResponse{EnqueuedMessage: &queuev1.EnqueuedMessage{Id: in.GetMessageId(), Position: in.GetPosition()}}, nil
}

func (q fakeQueue) DeleteEnqueuedMessage(_ context.Context, in *queuev1.DeleteEnqueuedMessageRequest, _ ...grpc.CallOption) (*queuev1.DeleteEnqueuedMessageResponse, error) {
	if err := q.f.record("DeleteEnqueuedMessage", in); err != nil {
		return nil, err
	}
	return &queuev1.DeleteEnqueuedMessageResponse{}, nil
}

func (r fakeRunner) GetClone(context.Context, *runnerv1.GetCloneRequest, ...grpc.CallOption) (*runnerv1.GetCloneResponse, error) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if r.f.page.clone == nil {
		return nil, status.Error(codes.NotFound, "no clone for session 7")
	}
	return &runnerv1.GetCloneResponse{Clone: r.f.page.clone}, nil
}

func (r fakeRunner) FollowTranscript(ctx context.Context, in *runnerv1.FollowTranscriptRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[runnerv1.FollowTranscriptResponse], error) {
	r.f.mu.Lock()
	r.f.page.follows = append(r.f.page.follows, in)
	lines := r.f.page.follow
	r.f.mu.Unlock()
	return &followStream{ctx: ctx, lines: lines}, nil
}

// followStream is a FollowTranscript stream fed by a channel.
type followStream struct {
	grpc.ClientStream
	ctx   context.Context
	lines chan *runnerv1.TranscriptLine
}

func (s *followStream) Recv() (*runnerv1.FollowTranscriptResponse, error) {
	select {
	case l := <-s.lines:
		return &runnerv1.FollowTranscriptResponse{Line: l}, nil
	case <-s.ctx.Done():
		return nil, status.FromContextError(s.ctx.Err()).Err()
	}
}

func (s *followStream) Header() (metadata.MD, error) { return nil, nil }

type fakeTriggers struct {
	lifecyclev1.TriggerServiceClient
	f *fakes
}

func (t fakeTriggers) ListTriggers(context.Context, *lifecyclev1.ListTriggersRequest, ...grpc.CallOption) (*lifecyclev1.ListTriggersResponse, error) {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return &lifecyclev1.ListTriggersResponse{Triggers: t.f.page.triggers}, nil
}

func (t fakeTriggers) PauseUntil(_ context.Context, in *lifecyclev1.PauseUntilRequest, _ ...grpc.CallOption) (*lifecyclev1.PauseUntilResponse, error) {
	if err := t.f.record("PauseUntil", in); err != nil {
		return nil, err
	}
	return &lifecyclev1.PauseUntilResponse{Message: "Session #7 is asleep until " + in.GetWakeAtText() + " " + in.GetTimezone() + "."}, nil
}

func (t fakeTriggers) CancelTrigger(_ context.Context, in *lifecyclev1.CancelTriggerRequest, _ ...grpc.CallOption) (*lifecyclev1.CancelTriggerResponse, error) {
	if err := t.f.record("CancelTrigger", in); err != nil {
		return nil, err
	}
	return &lifecyclev1.CancelTriggerResponse{}, nil
}

type fakeNotifications struct {
	notificationv1.NotificationServiceClient
	f *fakes
}

func (n fakeNotifications) ListNotifications(_ context.Context, in *notificationv1.ListNotificationsRequest, _ ...grpc.CallOption) (*notificationv1.ListNotificationsResponse, error) {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	var unread int32
	for _, x := range n.f.page.notifications {
		if !x.GetRead() && !x.GetDismissed() {
			unread++
		}
	}
	list := n.f.page.notifications
	if in.GetUnread() {
		list = nil
	}
	return &notificationv1.ListNotificationsResponse{Notifications: list, UnreadCount: unread, NextPageToken: "page-2"}, nil
}

func (n fakeNotifications) MarkNotificationRead(_ context.Context, in *notificationv1.MarkNotificationReadRequest, _ ...grpc.CallOption) (*notificationv1.MarkNotificationReadResponse, error) {
	if err := n.f.record("MarkNotificationRead", in); err != nil {
		return nil, err
	}
	return &notificationv1.MarkNotificationReadResponse{}, nil
}

func (n fakeNotifications) DismissNotification(_ context.Context, in *notificationv1.DismissNotificationRequest, _ ...grpc.CallOption) (*notificationv1.DismissNotificationResponse, error) {
	if err := n.f.record("DismissNotification", in); err != nil {
		return nil, err
	}
	return &notificationv1.DismissNotificationResponse{}, nil
}

func (n fakeNotifications) MarkAllNotificationsRead(_ context.Context, in *notificationv1.MarkAllNotificationsReadRequest, _ ...grpc.CallOption) (*notificationv1.MarkAllNotificationsReadResponse, error) {
	if err := n.f.record("MarkAllNotificationsRead", in); err != nil {
		return nil, err
	}
	return &notificationv1.MarkAllNotificationsReadResponse{Marked: 1}, nil
}

func (n fakeNotifications) ListAlerts(context.Context, *notificationv1.ListAlertsRequest, ...grpc.CallOption) (*notificationv1.ListAlertsResponse, error) {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	return &notificationv1.ListAlertsResponse{Alerts: n.f.page.alerts}, nil
}

// form is a form of page by its action: its hidden fields, so a test
// submits what the page rendered.
func form(t *testing.T, page, action string) url.Values {
	t.Helper()
	re := regexp.MustCompile(`(?s)<form method="post" action="` + regexp.QuoteMeta(action) + `"[^>]*>(.*?)</form>`)
	m := re.FindStringSubmatch(page)
	require.NotNil(t, m, "no form posting to %s on the page", action)
	values := url.Values{}
	for _, f := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(m[1], -1) {
		values.Set(f[1], f[2])
	}
	return values
}

func TestTheSessionPageShowsItsParts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	b.fakes.mu.Lock()
	b.fakes.page.hierarchy.Truncated = true
	b.fakes.page.hierarchy.TruncationReason = "Showing at most 150 sessions, 8 levels from the highest ancestor reached. This tree is larger."
	b.fakes.mu.Unlock()
	a := b.get(t, c, "/console/sessions/7")
	require.Equal(t, http.StatusOK, a.code, a.body)
	body := a.body

	// The hierarchy: nested by depth, every other node linked, this one
	// marked and not linked, the pills, the truncation said.
	require.Regexp(t, `(?s)<ul class="tree">.*The router.*<ul class="tree">.*This one.*<ul class="tree">.*A helper.*</ul>.*A sibling.*</ul>.*</ul>`, body)
	require.Contains(t, body, `<a href="/console/sessions/5">The router &lt;script&gt;`)
	require.Contains(t, body, `<a href="/console/sessions/9">A helper</a>`)
	require.Contains(t, body, `<strong aria-current="page">This one</strong>`)
	require.NotContains(t, body, `href="/console/sessions/7"`, "the current session is not linked to itself")
	require.Contains(t, body, "#9 · waiting")
	require.Contains(t, body, "web_ui · spot")
	require.Contains(t, body, "uncle: #11")
	require.Contains(t, body, "This tree is larger.")
	// Both counts, always, and that the elsewhere count is a floor.
	require.Contains(t, body, "1 messages in this session · 0 elsewhere in the hierarchy (truncated tree — not every session was searched)")

	// The queue: pending messages with their controls, in order; the
	// undelivered one listed, marked, without controls.
	require.Contains(t, body, `action="/console/sessions/7/queue/31/send-now"`)
	require.Contains(t, body, `action="/console/sessions/7/queue/32/interrupt"`)
	require.Contains(t, body, `action="/console/sessions/7/queue/31/delete"`)
	require.Equal(t, "2", form(t, body, "/console/sessions/7/queue/31/move").Get("position"), "the first moves down only")
	require.Equal(t, "1", form(t, body, "/console/sessions/7/queue/32/move").Get("position"), "the last moves up only")
	require.Contains(t, body, "never delivered: its session was archived")
	require.NotContains(t, body, `/queue/30/`)

	// The timeline, the clone, the triggers with their cancel.
	require.Contains(t, body, "[State Machine] started &lt;script&gt;")
	require.Contains(t, body, "preserved")
	require.Contains(t, body, "/keep/7/unpushed.bundle</code> (2.0 KiB)")
	require.Contains(t, body, "2030-04-15 13:30:00 UTC: what is kept is deleted then")
	require.Contains(t, body, "Wakes at 2030-04-15 09:30 EDT (America/New_York)")
	require.Contains(t, body, `Wakes when <a href="/console/sessions/9">#9</a> is needs input or failed`)
	require.Contains(t, body, `action="/console/sessions/7/triggers/41/cancel"`)
	require.Contains(t, body, `action="/console/sessions/7/triggers/42/cancel"`)

	// Title and notes editable; the transcript streams from its last line.
	require.Contains(t, body, `action="/console/sessions/7/title"`)
	require.Contains(t, body, `action="/console/sessions/7/notes"`)
	require.Contains(t, body, `data-transcript-stream="/console/sessions/7/transcript/stream?after=1"`)
	require.Contains(t, body, `<script src="/console/static/session-1.js" defer></script>`)
	require.Equal(t, http.StatusOK, b.get(t, c, "/console/static/session-1.js").code)

	// A session with no clone says so.
	b.fakes.mu.Lock()
	b.fakes.page.clone = nil
	b.fakes.mu.Unlock()
	require.Contains(t, b.get(t, c, "/console/sessions/7").body, "No clone: the runner has made none for this session.")
}

func TestTheActionsAreTheMachinesForTheStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	for _, tc := range []struct {
		status  string
		offered []string
		absent  []string
		label   string
	}{
		{"running", []string{"pause", "pause-until", "archive"}, []string{"restart", "restore"}, ""},
		{"needs_input", []string{"restart", "pause-until", "archive"}, []string{"pause", "restore"}, "Resume"},
		{"waiting", []string{"restart", "pause-until", "archive"}, []string{"pause", "restore"}, "Resume"},
		{"failed", []string{"restart", "archive"}, []string{"pause", "pause-until", "restore"}, "Restart"},
		{"archived", []string{"restore"}, []string{"pause", "pause-until", "restart", "archive"}, ""},
	} {
		b.setStatus(tc.status)
		body := b.get(t, c, "/console/sessions/7").body
		for _, a := range tc.offered {
			require.Contains(t, body, `action="/console/sessions/7/`+a+`"`, "%s offers %s", tc.status, a)
		}
		for _, a := range tc.absent {
			require.NotContains(t, body, `action="/console/sessions/7/`+a+`"`, "%s does not offer %s", tc.status, a)
		}
		if tc.label != "" {
			require.Regexp(t, `action="/console/sessions/7/restart".*<button type="submit">`+tc.label+`</button>`, body)
		}
	}
}

func TestTheQueuesActionsCallTheQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	page := b.get(t, c, "/console/sessions/7").body
	for _, action := range []string{"31/send-now", "32/interrupt", "32/move", "31/delete"} {
		path := "/console/sessions/7/queue/" + action
		a := b.post(t, c, path, form(t, page, path))
		require.Equal(t, http.StatusSeeOther, a.code, a.body)
		require.Equal(t, "/console/sessions/7", a.header.Get("Location"))
	}
	require.Contains(t, b.get(t, c, "/console/sessions/7").body, "Queued message 31 deleted", "the last answer")
	calls := b.calls()
	require.Len(t, calls, 4)
	require.True(t, proto.Equal(&queuev1.SendEnqueuedMessageNowRequest{SessionId: "7", MessageId: 31}, calls[0]), "%v", calls[0])
	require.True(t, proto.Equal(&queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "7", MessageId: 32}, calls[1]), "%v", calls[1])
	require.True(t, proto.Equal(&queuev1.UpdateEnqueuedMessageRequest{SessionId: "7", MessageId: 32, Position: 1}, calls[2]), "%v", calls[2])
	require.True(t, proto.Equal(&queuev1.DeleteEnqueuedMessageRequest{SessionId: "7", MessageId: 31}, calls[3]), "%v", calls[3])

	// A refusal comes back on the page in the queue's words.
	b.refuseNext("SendEnqueuedMessageNow", status.Error(codes.FailedPrecondition, "message 31 is sent, not pending: only a pending message can be sent now"))
	token := csrfField.FindStringSubmatch(page)[1]
	a := b.post(t, c, "/console/sessions/7/queue/31/send-now", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusUnprocessableEntity, a.code, a.body)
	require.Contains(t, a.body, "only a pending message can be sent now")
	// A form that is not the page's is refused before any call.
	a = b.post(t, c, "/console/sessions/7/queue/31/move", url.Values{"csrf": {token}, "position": {"first"}})
	require.Equal(t, http.StatusBadRequest, a.code, a.body)
	require.Contains(t, a.body, `position: &#34;first&#34; is not a positive whole number`)
	require.Len(t, b.calls(), 5)
}

func TestPauseUntilReadsTheTimeInTheUsersZone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	page := b.get(t, c, "/console/sessions/7").body
	require.Contains(t, page, `name="wake_at" type="datetime-local" required`)
	require.Contains(t, page, `value="UTC" data-browser-zone`, "UTC until the page's script reads the browser's zone")
	f := form(t, page, "/console/sessions/7/pause-until")
	f.Set("wake_at", "2030-04-15T09:30")
	f.Set("timezone", "America/New_York")
	a := b.post(t, c, "/console/sessions/7/pause-until", f)
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	calls := b.calls()
	require.Len(t, calls, 1)
	require.True(t, proto.Equal(&lifecyclev1.PauseUntilRequest{SessionId: "7", WakeAtText: "2030-04-15T09:30", Timezone: "America/New_York"}, calls[0]), "%v", calls[0])
	require.Contains(t, b.get(t, c, "/console/sessions/7").body, "asleep until 2030-04-15T09:30 America/New_York")

	// Lifecycle's refusal, in its words, with what was typed kept.
	b.refuseNext("PauseUntil", status.Error(codes.FailedPrecondition, "wake_at 2020-01-01T00:00 is in the past: give a time at least 30 s from now"))
	f.Set("wake_at", "2020-01-01T00:00")
	a = b.post(t, c, "/console/sessions/7/pause-until", f)
	require.Equal(t, http.StatusUnprocessableEntity, a.code, a.body)
	require.Contains(t, a.body, "is in the past: give a time at least 30 s from now")
	require.Contains(t, a.body, `value="2020-01-01T00:00"`)
	require.Contains(t, a.body, `value="America/New_York"`)
}

func TestARestartActsOnceHoweverOftenSubmitted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	page := b.get(t, c, "/console/sessions/7").body
	f := form(t, page, "/console/sessions/7/restart")
	key := f.Get("idempotency_key")
	require.NotEmpty(t, key)
	for range 2 { // a double click
		a := b.post(t, c, "/console/sessions/7/restart", f)
		require.Equal(t, http.StatusSeeOther, a.code, a.body)
	}
	calls := b.calls()
	require.Len(t, calls, 2)
	for _, call := range calls {
		require.Equal(t, key, call.(*lifecyclev1.RestartSessionRequest).GetIdempotencyKey(),
			"the form's key is lifecycle's idempotency key: lifecycle, not the gateway's memory, makes it once")
	}
	require.Contains(t, b.get(t, c, "/console/sessions/7").body, console.AlreadyDone, "lifecycle's already_applied, said so")

	// The next render's form is a new key: a deliberate second restart acts.
	f = form(t, b.get(t, c, "/console/sessions/7").body, "/console/sessions/7/restart")
	require.NotEqual(t, key, f.Get("idempotency_key"))
	require.Equal(t, http.StatusSeeOther, b.post(t, c, "/console/sessions/7/restart", f).code)
	require.NotContains(t, b.get(t, c, "/console/sessions/7").body, console.AlreadyDone)
}

func TestTitleAndNotesAreEditable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	page := b.get(t, c, "/console/sessions/7").body
	require.Contains(t, page, `id="edit-title" name="title" value="&lt;script&gt;`, "the current title, escaped")
	f := form(t, page, "/console/sessions/7/title")
	f.Set("title", "A better title")
	require.Equal(t, http.StatusSeeOther, b.post(t, c, "/console/sessions/7/title", f).code)
	f = form(t, page, "/console/sessions/7/notes")
	f.Set("notes", "remember the docs")
	require.Equal(t, http.StatusSeeOther, b.post(t, c, "/console/sessions/7/notes", f).code)
	calls := b.calls()
	require.Len(t, calls, 2)
	require.Equal(t, "A better title", calls[0].(*lifecyclev1.UpdateSessionRequest).GetTitle())
	require.Nil(t, calls[0].(*lifecyclev1.UpdateSessionRequest).Notes, "a title edit changes nothing else")
	require.Equal(t, "remember the docs", calls[1].(*lifecyclev1.UpdateSessionRequest).GetNotes())
	require.Nil(t, calls[1].(*lifecyclev1.UpdateSessionRequest).Title)

	b.refuseNext("UpdateSession", status.Error(codes.InvalidArgument, "title: at most 255 characters"))
	f = form(t, page, "/console/sessions/7/title")
	f.Set("title", "too long, say")
	a := b.post(t, c, "/console/sessions/7/title", f)
	require.Equal(t, http.StatusUnprocessableEntity, a.code, a.body)
	require.Contains(t, a.body, "title: at most 255 characters")
	require.Contains(t, a.body, `value="too long, say"`, "what was typed is kept")
}

func TestATriggerIsCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	page := b.get(t, c, "/console/sessions/7").body
	a := b.post(t, c, "/console/sessions/7/triggers/41/cancel", form(t, page, "/console/sessions/7/triggers/41/cancel"))
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	calls := b.calls()
	require.Len(t, calls, 1)
	require.True(t, proto.Equal(&lifecyclev1.CancelTriggerRequest{SessionId: "7", TriggerId: 41}, calls[0]))
	require.Contains(t, b.get(t, c, "/console/sessions/7").body, "Trigger 41 cancelled")

	b.refuseNext("CancelTrigger", status.Error(codes.NotFound, "trigger 41 is not armed (it fired or was cancelled)"))
	a = b.post(t, c, "/console/sessions/7/triggers/41/cancel", form(t, page, "/console/sessions/7/triggers/41/cancel"))
	require.Equal(t, http.StatusNotFound, a.code, a.body)
	require.Contains(t, a.body, "trigger 41 is not armed", "shown on the session's page")
	require.Contains(t, a.body, `<h1 class="title">`)
}

func TestArchivingFromThePageStaysOnItAndOffersRestore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	page := b.get(t, c, "/console/sessions/7").body
	f := form(t, page, "/console/sessions/7/archive")
	f.Set("force", "1")
	a := b.post(t, c, "/console/sessions/7/archive", f)
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Equal(t, "/console/sessions/7?trashed=1", a.header.Get("Location"), "the page stays")

	a = b.get(t, c, a.header.Get("Location"))
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, console.TrashedToast)
	require.Contains(t, a.body, `<button type="submit">Undo</button>`)
	require.Contains(t, a.body, `<button type="submit">Restore</button>`, "the Archive button became Restore")
	require.NotContains(t, a.body, `action="/console/sessions/7/archive"`)

	a = b.post(t, c, "/console/sessions/7/restore", form(t, a.body, "/console/sessions/7/restore"))
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	require.Equal(t, "/console/sessions/7", a.header.Get("Location"))
	a = b.get(t, c, "/console/sessions/7")
	require.Contains(t, a.body, `action="/console/sessions/7/archive"`)
	require.NotContains(t, a.body, ">Undo<")
}

// sse reads server-sent events off a response.
type sse struct{ r *bufio.Reader }

func (s sse) next(t *testing.T) (id, event, data string) {
	t.Helper()
	var datas []string
	for {
		line, err := s.r.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if event != "" || len(datas) > 0 {
				return id, event, strings.Join(datas, "\n")
			}
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			datas = append(datas, strings.TrimPrefix(line, "data: "))
		}
	}
}

func TestTheTranscriptStreamsLinesAsServerSentEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	stream := func(lastEventID string) *http.Response {
		req, err := http.NewRequest(http.MethodGet, b.srv.URL+"/console/sessions/7/transcript/stream?after=1", nil)
		require.NoError(t, err)
		if lastEventID != "" {
			req.Header.Set("Last-Event-ID", lastEventID)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	resp := stream("")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	b.fakes.page.follow <- &runnerv1.TranscriptLine{Id: 2, TurnId: "turn-1", Kind: "assistant", Text: "line one\n" + hostile}
	id, event, data := sse{bufio.NewReader(resp.Body)}.next(t)
	require.Equal(t, "2", id)
	require.Equal(t, "line", event)
	require.Equal(t, "<li id=\"line-2\" class=\"line assistant\" data-turn=\"turn-1\"><span class=\"kind\">assistant</span> <span class=\"text\">line one\n"+
		"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</span></li>", data, "the page's own rendering, escaped")
	_ = resp.Body.Close()

	// A reconnect resumes after the last event it had.
	resp = stream("2")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b.fakes.mu.Lock()
	follows := append([]*runnerv1.FollowTranscriptRequest(nil), b.fakes.page.follows...)
	b.fakes.mu.Unlock()
	require.Len(t, follows, 2)
	require.EqualValues(t, 1, follows[0].GetAfterLineId(), "the page's last line")
	require.EqualValues(t, 2, follows[1].GetAfterLineId(), "Last-Event-ID wins")
	require.Equal(t, "7", follows[1].GetSessionId())

	a := b.get(t, c, "/console/sessions/7/transcript/stream?after=yesterday")
	require.Equal(t, http.StatusBadRequest, a.code)
	require.Contains(t, a.body, "is not a transcript line id")
	a = b.get(t, b.browser(t), "/console/sessions/7/transcript/stream")
	require.Equal(t, http.StatusSeeOther, a.code, "signed out: no stream")
}

func TestTheInboxAndTheAlerts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	// The unread count is in every page's header.
	require.Contains(t, b.get(t, c, "/console/").body, `Inbox <span class="count">(1 unread)</span>`)

	a := b.get(t, c, "/console/notifications")
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, `<a href="/console/sessions/7">session #7</a>`)
	require.Contains(t, a.body, `<a href="/console/sessions/8">session #8</a>`)
	require.Contains(t, a.body, "PR ready &lt;script&gt;")
	require.Contains(t, a.body, `action="/console/notifications/51/read"`)
	require.NotContains(t, a.body, `action="/console/notifications/52/read"`, "already read")
	require.Contains(t, a.body, `action="/console/notifications/52/dismiss"`)
	require.Contains(t, a.body, `href="/console/notifications?page_token=page-2"`)

	for _, path := range []string{"/console/notifications/51/read", "/console/notifications/52/dismiss", "/console/notifications/read-all"} {
		a := b.post(t, c, path, form(t, b.get(t, c, "/console/notifications").body, path))
		require.Equal(t, http.StatusSeeOther, a.code, a.body)
		require.Equal(t, "/console/notifications", a.header.Get("Location"))
	}
	calls := b.calls()
	require.Len(t, calls, 3)
	require.True(t, proto.Equal(&notificationv1.MarkNotificationReadRequest{NotificationId: 51}, calls[0]))
	require.True(t, proto.Equal(&notificationv1.DismissNotificationRequest{NotificationId: 52}, calls[1]))
	require.True(t, proto.Equal(&notificationv1.MarkAllNotificationsReadRequest{}, calls[2]))
	require.Contains(t, b.get(t, c, "/console/notifications").body, "Marked 1 read.")

	b.refuseNext("MarkNotificationRead", status.Error(codes.NotFound, "notification 51 not found"))
	a = b.post(t, c, "/console/notifications/51/read", form(t, b.get(t, c, "/console/notifications").body, "/console/notifications/51/read"))
	require.Equal(t, http.StatusNotFound, a.code)
	require.Contains(t, a.body, "notification 51 not found")

	a = b.get(t, c, "/console/alerts")
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Contains(t, a.body, "a callback failed &lt;script&gt;")
	require.Contains(t, a.body, `<span class="count">×3</span>`)
	require.Contains(t, a.body, "first seen 2030-04-15 13:30:00 UTC")
	require.Contains(t, a.body, "last seen 2030-04-15 13:31:00 UTC")
	// The roster stays behind the Supervisor's realm, one click away.
	require.Contains(t, a.body, `<a href="/supervisor/users"`)
}

func TestEveryNewFormNeedsItsCSRFToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.signedIn(t)
	for _, path := range []string{
		"/console/sessions/7/restart", "/console/sessions/7/pause-until", "/console/sessions/7/title", "/console/sessions/7/notes",
		"/console/sessions/7/triggers/41/cancel", "/console/sessions/7/queue/31/send-now", "/console/sessions/7/queue/31/interrupt",
		"/console/sessions/7/queue/31/move", "/console/sessions/7/queue/31/delete",
		"/console/notifications/51/read", "/console/notifications/51/dismiss", "/console/notifications/read-all",
	} {
		a := b.post(t, c, path, url.Values{"csrf": {"forged"}, "position": {"1"}, "title": {"x"}})
		require.Equal(t, http.StatusForbidden, a.code, path)
	}
	require.Empty(t, b.calls(), "a refused form does nothing")
}
