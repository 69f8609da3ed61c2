package push_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/app/apptest"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/push"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

const session = 42

// envClock is the workflow test's mocked clock, as the app's Clock.
type envClock struct {
	env *testsuite.TestWorkflowEnvironment
}

func (c envClock) Now() time.Time { return c.env.Now().UTC() }

// fakeSink answers each Send with the next of its errors (nil once they
// run out), refusing the messages of refuse's dedup keys as many times as
// it says first, and records what it was asked to deliver, and when.
type fakeSink struct {
	name   string
	now    func() time.Time
	mu     sync.Mutex
	errs   []error
	refuse map[string]int
	sent   []sink.Message
	at     []time.Time
}

func (s *fakeSink) Name() string { return s.name }

func (s *fakeSink) Send(_ context.Context, m sink.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, m)
	s.at = append(s.at, s.now())
	if s.refuse[m.DedupKey] > 0 {
		s.refuse[m.DedupKey]--
		return &sink.Error{Sink: s.name, Retryable: true, Err: errors.New("503 Service Unavailable")}
	}
	if len(s.errs) == 0 {
		return nil
	}
	err := s.errs[0]
	s.errs = s.errs[1:]
	return err
}

func (s *fakeSink) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

type harness struct {
	t        *testing.T
	env      *testsuite.TestWorkflowEnvironment
	start    time.Time
	sessions *apptest.Sessions
	repo     *apptest.Notifications
	// sink is the push route's one sink in the debounce tests.
	sink *fakeSink
}

// newHarness registers the real workflows and activities over the app's
// use cases, with lifecycle and the repository faked; sinks are the push
// route's, a fake "ntfy" (h.sink) when none is given.
func newHarness(t *testing.T, sinks ...sink.Sink) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slogx.Discard()))
	h := &harness{t: t, env: suite.NewTestWorkflowEnvironment(), start: time.Date(2030, 3, 1, 12, 0, 0, 0, time.UTC)}
	h.env.SetStartTime(h.start)
	h.sessions = &apptest.Sessions{Now: h.env.Now}
	h.repo = &apptest.Notifications{}
	if len(sinks) == 0 {
		h.sink = &fakeSink{name: "ntfy", now: h.env.Now}
		sinks = []sink.Sink{h.sink}
	}
	clk := envClock{h.env}
	push.Register(h.env, &push.Activities{
		NeedsInput: app.RecordNeedsInput{Repo: h.repo, Sessions: h.sessions, Clock: clk},
		Pushed:     app.MarkPushed{Repo: h.repo, Clock: clk},
		Sinks:      sinks,
	})
	return h
}

// pushed returns the debounce's deliveries and when each came.
func (h *harness) pushed() ([]sink.Message, []time.Duration) {
	h.sink.mu.Lock()
	defer h.sink.mu.Unlock()
	return slices.Clone(h.sink.sent), h.offsets(h.sink.at)
}

// at runs fn at the virtual offset d from the start.
func (h *harness) at(d time.Duration, fn func()) { h.env.RegisterDelayedCallback(fn, d) }

// pause is the session pausing at d: lifecycle now answers it waiting
// from pause marker, and its effect signals the debounce.
func (h *harness) pause(d time.Duration, marker int64) {
	h.at(d, func() {
		h.sessions.Set(domain.Session{ID: session, Title: "Fix the flaky test", Status: "needs_input", NeedsInputCount: marker, PushNotifications: true})
		h.env.SignalWorkflow(push.SignalPaused, push.Paused{Marker: marker})
	})
}

// resume is the session resuming at d (lifecycle answers it running).
func (h *harness) resume(d time.Duration, count int64) {
	h.at(d, func() {
		h.sessions.Set(domain.Session{ID: session, Title: "Fix the flaky test", Status: "running", NeedsInputCount: count, PushNotifications: true})
	})
}

// run executes the debounce to its end and returns its outcome.
func (h *harness) run() push.DebounceResult {
	h.t.Helper()
	h.env.ExecuteWorkflow(push.DebounceWorkflowName, push.DebounceInput{SessionID: session, Debounce: push.DefaultDebounce, Sinks: []string{"ntfy"}})
	require.True(h.t, h.env.IsWorkflowCompleted())
	require.NoError(h.t, h.env.GetWorkflowError())
	var out push.DebounceResult
	require.NoError(h.t, h.env.GetWorkflowResult(&out))
	return out
}

// offsets are times since the start.
func (h *harness) offsets(times []time.Time) []time.Duration {
	var out []time.Duration
	for _, at := range times {
		out = append(out, at.Sub(h.start))
	}
	return out
}

func TestNeedsInputPushesAfterTheDebounceAndNotBefore(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pause(0, 1)
	h.at(59*time.Second, func() {
		sent, _ := h.pushed()
		require.Empty(t, sent, "nothing at +59 s")
		require.Empty(t, h.sessions.Asked(), "lifecycle is not even asked yet")
	})
	out := h.run()

	sent, at := h.pushed()
	require.Equal(t, []time.Duration{time.Minute}, at, "pushed at +60 s")
	require.Equal(t, []time.Duration{time.Minute}, h.offsets(h.sessions.Asked()), "lifecycle asked once the timer fired")
	stored := h.repo.All()
	require.Len(t, stored, 1)
	n := stored[0]
	require.Equal(t, domain.TypeNeedsInput, n.Type)
	require.EqualValues(t, 1, n.Marker)
	require.Equal(t, h.start.Add(time.Minute), n.CreatedAt)
	require.Equal(t, h.start.Add(time.Minute), *n.PushedAt, "recorded pushed")
	require.Equal(t, sink.Message{
		Kind: sink.KindPush, Type: "needs_input", Title: "Session 42 needs your input: Fix the flaky test", Body: n.Body,
		SessionID: "42", DedupKey: n.PushDedupKey(), Time: n.CreatedAt,
	}, sent[0])
	require.Equal(t, push.DebounceResult{Marker: 1, NotificationID: n.ID}, out)
}

// A session flapping inside the window pushes once, for its latest
// pause, a full debounce after it; a redelivered earlier pause neither
// re-arms nor pushes.
func TestNeedsInputFlappingPushesOnceForTheLatestPause(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pause(0, 1)
	h.resume(10*time.Second, 1)
	h.pause(20*time.Second, 2)
	h.resume(30*time.Second, 2)
	h.pause(40*time.Second, 3)
	h.at(70*time.Second, func() { h.env.SignalWorkflow(push.SignalPaused, push.Paused{Marker: 2}) }) // a redelivery
	out := h.run()

	_, at := h.pushed()
	require.Equal(t, []time.Duration{100 * time.Second}, at, "60 s after the latest pause")
	require.EqualValues(t, 3, out.Marker)
	require.Len(t, h.repo.All(), 1)
	require.EqualValues(t, 3, h.repo.All()[0].Marker)
	require.Equal(t, []time.Duration{100 * time.Second}, h.offsets(h.sessions.Asked()), "earlier pauses never reached their timer")
}

func TestNeedsInputHundredFlapsInAMinutePushOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i := range 100 {
		h.pause(time.Duration(i)*600*time.Millisecond, int64(i+1))
	}
	h.run()
	_, at := h.pushed()
	require.Equal(t, []time.Duration{99*600*time.Millisecond + time.Minute}, at, "one push")
	require.Len(t, h.repo.All(), 1)
	require.EqualValues(t, 100, h.repo.All()[0].Marker)
}

// The debounce counts from when the pause happened, which the signal
// carries: a signal that reached the workflow late (its first task waited
// in the queue, the relay was slow) does not push late, one later than a
// whole debounce is checked at once, and a pause time ahead of the
// workflow's clock counts as now.
func TestNeedsInputCountsFromThePause(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		signalled time.Duration // when the signal reaches the workflow
		happened  time.Duration // the pause's time it carries
		want      time.Duration
	}{
		{"signal 10 s late", 10 * time.Second, 0, time.Minute},
		{"signal later than the debounce", 90 * time.Second, 0, 90 * time.Second},
		{"a clock ahead", 0, 30 * time.Second, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.at(tc.signalled, func() {
				h.sessions.Set(domain.Session{ID: session, Status: "needs_input", NeedsInputCount: 1, PushNotifications: true})
				h.env.SignalWorkflow(push.SignalPaused, push.Paused{Marker: 1, At: h.start.Add(tc.happened)})
			})
			h.run()
			_, at := h.pushed()
			require.Equal(t, []time.Duration{tc.want}, at)
		})
	}
}

func TestNeedsInputResumedInsideTheWindowPushesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pause(0, 1)
	h.resume(30*time.Second, 1)
	out := h.run()
	sent, _ := h.pushed()
	require.Empty(t, sent)
	require.Empty(t, h.repo.All(), "no notification either")
	require.Contains(t, out.Skipped, "session 42 is running now")
	require.Equal(t, []time.Duration{time.Minute}, h.offsets(h.sessions.Asked()))
}

// Lifecycle already counts a later pause whose signal is still on its way:
// the earlier pause pushes nothing (the later one's own debounce will).
func TestNeedsInputANewerMarkerWins(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pause(0, 1)
	h.at(50*time.Second, func() {
		h.sessions.Set(domain.Session{ID: session, Status: "needs_input", NeedsInputCount: 2, PushNotifications: true})
	})
	out := h.run()
	sent, _ := h.pushed()
	require.Empty(t, sent)
	require.Contains(t, out.Skipped, "session 42 paused again since (needs_input_count 2, this push was for 1)")
}

// A pause that lands while the debounce is ending its previous one (the
// check is retrying) is waited out from its own signal before it ends.
func TestNeedsInputAPauseDuringTheCheckIsNotLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pause(0, 1)
	h.at(59*time.Second, func() { h.sessions.Fail(errors.New("lifecycle unavailable")) })
	h.pause(61*time.Second, 2) // the check for pause 1 is retrying meanwhile
	h.at(62*time.Second, func() { h.sessions.Fail(nil) })
	out := h.run()
	_, at := h.pushed()
	require.Equal(t, []time.Duration{121 * time.Second}, at, "pause 1's check found pause 2 counted; pause 2 waited its full debounce")
	require.EqualValues(t, 2, out.Marker)
	require.EqualValues(t, 2, h.repo.All()[0].Marker)
}

// A sink that is down holds up no later pause: the push retries beside
// the debounce, which answers the next pause on time, and ends when both
// are done.
func TestNeedsInputASlowSinkHoldsUpNoLaterPause(t *testing.T) {
	t.Parallel()
	var h *harness
	// Pause 1's notification (id 1) is refused 7 times: 1+2+…+64 s of backoff.
	slow := &fakeSink{name: "ntfy", now: func() time.Time { return h.env.Now() }, refuse: map[string]int{"notification/1": 7}}
	h = newHarness(t, slow)
	h.sink = slow
	h.pause(0, 1)
	h.pause(70*time.Second, 2)
	out := h.run()
	sent, at := h.pushed()
	require.Len(t, sent, 9, "pause 1: 7 refusals and a delivery; pause 2: one delivery")
	require.Equal(t, "notification/2", sent[7].DedupKey)
	require.Equal(t, 130*time.Second, at[7], "pause 2 pushed on time while pause 1's push retried")
	require.Equal(t, "notification/1", sent[8].DedupKey)
	require.Equal(t, 60*time.Second+127*time.Second, at[8], "pause 1 delivered after its backoff")
	require.EqualValues(t, 2, out.Marker)
	for _, n := range h.repo.All() {
		require.NotNil(t, n.PushedAt, "notification %d recorded pushed", n.ID)
	}
}

func TestNeedsInputRespectsTheOptOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(0, func() {
		h.sessions.Set(domain.Session{ID: session, Status: "needs_input", NeedsInputCount: 1, PushNotifications: false})
		h.env.SignalWorkflow(push.SignalPaused, push.Paused{Marker: 1})
	})
	out := h.run()
	sent, _ := h.pushed()
	require.Empty(t, sent)
	require.Contains(t, out.Skipped, "push_notifications off")
}

func TestNeedsInputForADeletedSessionPushesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.at(0, func() { h.env.SignalWorkflow(push.SignalPaused, push.Paused{Marker: 1}) })
	out := h.run()
	sent, _ := h.pushed()
	require.Empty(t, sent)
	require.Contains(t, out.Skipped, "session 42 no longer exists")
}

// Lifecycle down when the timer fires: the check is retried until it
// answers, and the answer read then decides.
func TestNeedsInputRetriesLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pause(0, 1)
	h.at(59*time.Second, func() { h.sessions.Fail(errors.New("lifecycle unavailable")) })
	h.at(65*time.Second, func() { h.sessions.Fail(nil) })
	h.run()
	_, at := h.pushed()
	require.Len(t, at, 1)
	asked := h.offsets(h.sessions.Asked())
	require.Greater(t, len(asked), 2, "retried")
	require.Equal(t, time.Minute, asked[0])
	require.GreaterOrEqual(t, at[0], 65*time.Second)
}

// The push of a failure goes out at once, to every sink; a failing sink
// is retried into a delivery while the others deliver on their own, and
// the notification is recorded pushed.
func TestPushDeliversAtOnceAndRetriesAFailingSink(t *testing.T) {
	t.Parallel()
	var h *harness
	now := func() time.Time { return h.env.Now() }
	transient := &sink.Error{Sink: "webhook", Retryable: true, Err: errors.New("503 Service Unavailable")}
	flaky := &fakeSink{name: "webhook", now: now, errs: []error{transient, transient}}
	steady := &fakeSink{name: "ntfy", now: now}
	h = newHarness(t, flaky, steady)

	// The session opted out of needs-input pushes; a failure ignores that.
	n, _, err := h.repo.Create(context.Background(),
		domain.Failure(domain.Session{ID: session, Title: "Fix the flaky test", PushNotifications: false}, "the clone is gone", "ev-1", h.start))
	require.NoError(t, err)
	h.env.ExecuteWorkflow(push.PushWorkflowName, push.Input{NotificationID: n.ID, Sinks: []string{"webhook", "ntfy"}, Message: push.Message(n)})
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError(), "the transient failures were retried into a delivery")

	require.Equal(t, []time.Duration{0}, h.offsets(steady.at), "immediate")
	require.Equal(t, 3, flaky.attempts())
	require.GreaterOrEqual(t, h.offsets(flaky.at)[2], 3*time.Second, "backoff 1 s, 2 s")
	msg := steady.sent[0]
	require.Equal(t, sink.KindPush, msg.Kind)
	require.Equal(t, "Session 42 failed: Fix the flaky test", msg.Title)
	require.Contains(t, msg.Body, "the clone is gone")
	require.Equal(t, "42", msg.SessionID)
	require.Equal(t, n.PushDedupKey(), msg.DedupKey)

	stored := h.repo.All()[0]
	require.NotNil(t, stored.PushedAt, "recorded pushed")
	require.Equal(t, h.start, *stored.PushedAt, "as soon as the first sink has it")
}

// A sink that refuses for good fails the push workflow (visible in the
// Web UI), after the others delivered; nothing waits on that workflow.
func TestPushNamesTheSinkThatGaveUp(t *testing.T) {
	t.Parallel()
	var h *harness
	now := func() time.Time { return h.env.Now() }
	refused := &fakeSink{name: "slack", now: now, errs: []error{&sink.Error{Sink: "slack", Err: errors.New("404 no_service")}}}
	steady := &fakeSink{name: "log", now: now}
	h = newHarness(t, refused, steady)
	n, _, err := h.repo.Create(context.Background(), domain.AgentMessage{SessionID: 3, Title: "Tests are green"}.Notification(h.start))
	require.NoError(t, err)
	h.env.ExecuteWorkflow(push.PushWorkflowName, push.Input{NotificationID: n.ID, Sinks: []string{"slack", "log"}, Message: push.Message(n)})
	require.True(t, h.env.IsWorkflowCompleted())
	require.ErrorContains(t, h.env.GetWorkflowError(), "sink slack")
	require.Equal(t, 1, refused.attempts(), "a permanent refusal is not retried")
	require.Equal(t, "Session 3: Tests are green", steady.sent[0].Title)
	require.NotNil(t, h.repo.All()[0].PushedAt, "the log sink got it")
}

func TestPushWithNoSinksIsNeverPushed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	n, _, err := h.repo.Create(context.Background(), domain.AgentMessage{Title: "hi"}.Notification(h.start))
	require.NoError(t, err)
	h.env.ExecuteWorkflow(push.PushWorkflowName, push.Input{NotificationID: n.ID, Message: push.Message(n)})
	require.NoError(t, h.env.GetWorkflowError())
	require.Nil(t, h.repo.All()[0].PushedAt)
}
