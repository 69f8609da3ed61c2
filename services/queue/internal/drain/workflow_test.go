package drain_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/queue/internal/drain"
)

const sessionID = 42

// fakeLifecycle answers RecordDrainAttempt from a script, one answer per
// call, counting like lifecycle does; it records when it was asked.
type fakeLifecycle struct {
	now     func() time.Time
	mu      sync.Mutex
	answers []func(count int) (drain.Attempt, error)
	count   int
	at      []time.Time
}

func (f *fakeLifecycle) RecordDrainAttempt(_ context.Context, id int64) (drain.Attempt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id != sessionID {
		return drain.Attempt{}, errors.New("asked about another session")
	}
	f.at = append(f.at, f.now())
	if len(f.answers) == 0 {
		return drain.Attempt{}, errors.New("more attempts than the test scripted")
	}
	answer := f.answers[0]
	f.answers = f.answers[1:]
	a, err := answer(f.count + 1)
	if a.Counted {
		f.count = a.Attempts
	}
	return a, err
}

func (f *fakeLifecycle) times() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.at...)
}

// counted answers an at-rest session: the attempt is counted.
func counted(n int) (drain.Attempt, error) { return drain.Attempt{Counted: true, Attempts: n}, nil }

// lifecycleDown answers as if lifecycle could not be reached.
func lifecycleDown(int) (drain.Attempt, error) {
	return drain.Attempt{}, errors.New("lifecycle unavailable")
}

// fakeDeliverer answers DeliverPending from a script.
type fakeDeliverer struct {
	mu      sync.Mutex
	answers []error // nil delivers; errEmpty finds nothing
	calls   int
	retired []string // the reasons RetireDeleted was given
}

func (f *fakeDeliverer) RetireDeleted(_ context.Context, id int64, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id != sessionID {
		return errors.New("retired another session")
	}
	f.retired = append(f.retired, reason)
	return nil
}

func (f *fakeDeliverer) retirements() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.retired...)
}

var errEmpty = errors.New("the queue is empty (not an error: the fake's marker)")

func (f *fakeDeliverer) DeliverPending(_ context.Context, id int64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if id != sessionID || len(f.answers) == 0 {
		return false, errors.New("a delivery the test did not script")
	}
	err := f.answers[0]
	f.answers = f.answers[1:]
	switch {
	case errors.Is(err, errEmpty):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

func (f *fakeDeliverer) called() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// fakeAlerts records the alerts raised.
type fakeAlerts struct {
	mu     sync.Mutex
	raised []raisedAlert
}

type raisedAlert struct {
	key, summary string
	details      map[string]any
}

func (f *fakeAlerts) RaiseAlert(_ context.Context, key, summary string, details map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.raised = append(f.raised, raisedAlert{key, summary, details})
	return nil
}

func (f *fakeAlerts) all() []raisedAlert {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]raisedAlert(nil), f.raised...)
}

type harness struct {
	t         *testing.T
	env       *testsuite.TestWorkflowEnvironment
	start     time.Time
	lifecycle *fakeLifecycle
	deliverer *fakeDeliverer
	alerts    *fakeAlerts
}

func newHarness(t *testing.T, attempts []func(int) (drain.Attempt, error), deliveries ...error) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slogx.Discard()))
	h := &harness{t: t, env: suite.NewTestWorkflowEnvironment(), start: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	h.env.SetStartTime(h.start)
	h.lifecycle = &fakeLifecycle{now: h.env.Now, answers: attempts}
	h.deliverer = &fakeDeliverer{answers: deliveries}
	h.alerts = &fakeAlerts{}
	h.env.RegisterWorkflowWithOptions(drain.Workflow, workflow.RegisterOptions{Name: drain.WorkflowName})
	(&drain.Activities{Lifecycle: h.lifecycle, Deliverer: h.deliverer, Alerts: h.alerts}).Register(h.env)
	return h
}

// run executes the workflow to its end and returns its outcome.
func (h *harness) run() drain.Outcome {
	h.t.Helper()
	h.env.ExecuteWorkflow(drain.WorkflowName, drain.Input{SessionID: sessionID})
	require.True(h.t, h.env.IsWorkflowCompleted())
	require.NoError(h.t, h.env.GetWorkflowError())
	var got drain.Outcome
	require.NoError(h.t, h.env.GetWorkflowResult(&got))
	return got
}

// offsets are the attempts' times since the workflow started.
func (h *harness) offsets() []time.Duration {
	var got []time.Duration
	for _, at := range h.lifecycle.times() {
		got = append(got, at.Sub(h.start))
	}
	return got
}

// The first attempt waits the full delay, so a caller that pauses and
// delivers right after gets to deliver first; a delivered message ends it.
func TestDrainWaitsThenDelivers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []func(int) (drain.Attempt, error){counted}, nil)
	require.Equal(t, drain.OutcomeDelivered, h.run())
	require.Equal(t, []time.Duration{drain.DefaultDelay}, h.offsets(), "no attempt before the delay")
	require.Equal(t, 1, h.deliverer.called())
	require.Empty(t, h.alerts.all())
}

func TestDrainDelayComesFromTheInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []func(int) (drain.Attempt, error){counted}, nil)
	h.env.ExecuteWorkflow(drain.WorkflowName, drain.Input{SessionID: sessionID, Delay: time.Second})
	require.NoError(t, h.env.GetWorkflowError())
	require.Equal(t, []time.Duration{time.Second}, h.offsets())
}

func TestDrainEndsOnAnEmptyQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []func(int) (drain.Attempt, error){counted}, errEmpty)
	require.Equal(t, drain.OutcomeEmpty, h.run())
	require.Len(t, h.offsets(), 1)
	require.Empty(t, h.alerts.all())
}

// A session that cannot take a delivery (running again, archived, blocked,
// parked) ends the drain without a delivery, a retry or an alert.
func TestDrainEndsQuietlyWhenRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []func(int) (drain.Attempt, error){func(int) (drain.Attempt, error) {
		return drain.Attempt{Refusal: "blocked_on_elicitation", Message: "blocked on an MCP elicitation"}, nil
	}})
	require.Equal(t, drain.OutcomeRefused, h.run())
	require.Len(t, h.offsets(), 1)
	require.Zero(t, h.deliverer.called())
	require.Empty(t, h.alerts.all())
}

// Three failed attempts, 30 seconds apart, then one alert: it names the
// session, says the messages stay pending, how many attempts failed, the
// last error and what to do. Nothing more is tried.
func TestDrainAlertsOnceAfterThreeFailedAttempts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []func(int) (drain.Attempt, error){counted, counted, lifecycleDown},
		errors.New("deliver turn: lifecycle busy"), errors.New("claim: connection reset"))
	require.Equal(t, drain.OutcomeExhausted, h.run())
	require.Equal(t, []time.Duration{10 * time.Second, 40 * time.Second, 70 * time.Second}, h.offsets())
	require.Equal(t, 2, h.deliverer.called(), "the third attempt failed before it could deliver")

	alerts := h.alerts.all()
	require.Len(t, alerts, 1)
	a := alerts[0]
	require.Equal(t, "queue_drain_exhausted/42", a.key)
	require.Contains(t, a.summary, "session 42")
	require.Contains(t, a.summary, "3 attempts, 30s apart")
	require.Contains(t, a.summary, "lifecycle unavailable", "the last error")
	require.Contains(t, a.summary, "stay pending")
	require.Contains(t, a.summary, "give the session a turn")
	require.Equal(t, map[string]any{
		"session_id": int64(42), "attempts_tried": 3, "attempts_counted": 2,
		"last_error": "count the attempt with lifecycle: lifecycle unavailable",
	}, a.details)
}

// An attempt that fails and a later one that delivers: no alert.
func TestDrainRetriesAFailedAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []func(int) (drain.Attempt, error){counted, counted}, errors.New("connection reset"), nil)
	require.Equal(t, drain.OutcomeDelivered, h.run())
	require.Equal(t, []time.Duration{10 * time.Second, 40 * time.Second}, h.offsets())
	require.Empty(t, h.alerts.all())
}

// An idle spell whose budget an earlier run spent (lifecycle counts past
// three) pages again under the same key and delivers nothing.
func TestDrainStopsWhenTheIdleSpellsBudgetIsSpent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []func(int) (drain.Attempt, error){func(int) (drain.Attempt, error) { return counted(4) }})
	require.Equal(t, drain.OutcomeExhausted, h.run())
	require.Len(t, h.offsets(), 1)
	require.Zero(t, h.deliverer.called())
	alerts := h.alerts.all()
	require.Len(t, alerts, 1)
	require.Equal(t, "queue_drain_exhausted/42", alerts[0].key)
	require.Contains(t, alerts[0].summary, "attempts for this idle spell are spent (lifecycle counts 4)")
	require.Contains(t, alerts[0].summary, "stay pending")
}

// Pokes that arrive while a run is under way (more messages queued) are
// answered by one more run, its own delay included, once the run ends; the
// workflow ends when no poke is left.
func TestDrainRunsAgainForPokesReceivedMeanwhile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []func(int) (drain.Attempt, error){counted, counted}, nil, errEmpty)
	for _, at := range []time.Duration{0, 3 * time.Second, 5 * time.Second, 9 * time.Second} {
		h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(drain.SignalPoke, nil) }, at)
	}
	require.Equal(t, drain.OutcomeEmpty, h.run(), "the last run's outcome")
	require.Equal(t, []time.Duration{10 * time.Second, 20 * time.Second}, h.offsets(),
		"the pokes during the first run's wait are answered by one more run")
	require.Equal(t, 2, h.deliverer.called())
}

// A poke during the attempts' back-off is not lost either.
func TestDrainRunsAgainForAPokeBetweenAttempts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []func(int) (drain.Attempt, error){counted, counted, counted}, errors.New("connection reset"), nil, nil)
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(drain.SignalPoke, nil) }, 25*time.Second)
	require.Equal(t, drain.OutcomeDelivered, h.run())
	require.Equal(t, []time.Duration{10 * time.Second, 40 * time.Second, 50 * time.Second}, h.offsets())
	require.Equal(t, 3, h.deliverer.called())
}

// A session lifecycle no longer knows (hard-deleted) ends the drain at its
// first attempt: no retry, no delivery, no exhausted alert; its messages
// go undelivered with lifecycle's reason (issue 20 item 14: the drain
// retried NotFound for minutes).
func TestDrainEndsAtOnceWhenTheSessionWasDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []func(int) (drain.Attempt, error){func(int) (drain.Attempt, error) {
		return drain.Attempt{Gone: true, Message: "session 42 not found"}, nil
	}})
	require.Equal(t, drain.OutcomeDeleted, h.run())
	require.Len(t, h.offsets(), 1, "one attempt, no retry")
	require.Zero(t, h.deliverer.called())
	require.Equal(t, []string{"session 42 not found"}, h.deliverer.retirements())
	require.Empty(t, h.alerts.all(), "not the exhausted-drain alert")
}
