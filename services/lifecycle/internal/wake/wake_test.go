package wake_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wake"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// fakeFirer answers from a script and records when it was asked, by the
// test environment's clock.
type fakeFirer struct {
	now     func() time.Time
	mu      sync.Mutex
	answers []func() (app.Fired, error)
	at      []time.Time
}

func (f *fakeFirer) Handle(_ context.Context, sessionID, triggerID int64) (app.Fired, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sessionID != 5 || triggerID != 7 {
		return app.Fired{}, temporal.NewNonRetryableApplicationError("fired another trigger", "test", nil)
	}
	f.at = append(f.at, f.now().UTC())
	if len(f.answers) == 0 {
		return app.Fired{}, temporal.NewNonRetryableApplicationError("more firings than scripted", "test", nil)
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	return a()
}

func (f *fakeFirer) times() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.at...)
}

func delivered() (app.Fired, error) { return app.Fired{Step: domain.FireDeliver}, nil }
func nothing() (app.Fired, error)   { return app.Fired{Step: domain.FireNothing}, nil }
func failing() (app.Fired, error)   { return app.Fired{}, errors.New("the queue is down") }

var start = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func run(t *testing.T, in wake.Input, answers ...func() (app.Fired, error)) (wake.Outcome, *fakeFirer, *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slogx.Discard()))
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	f := &fakeFirer{now: env.Now, answers: answers}
	env.RegisterWorkflowWithOptions(wake.Workflow, workflow.RegisterOptions{Name: wake.WorkflowName})
	(&wake.Activities{Fire: f}).Register(env)
	env.ExecuteWorkflow(wake.WorkflowName, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out wake.Outcome
	require.NoError(t, env.GetWorkflowResult(&out))
	return out, f, env
}

// TestFiresAtItsTimeNotBefore: a wake for +90 s fires at +90 s; at +89 s
// nothing has fired.
func TestFiresAtItsTimeNotBefore(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slogx.Discard()))
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	f := &fakeFirer{now: env.Now, answers: []func() (app.Fired, error){delivered}}
	env.RegisterWorkflowWithOptions(wake.Workflow, workflow.RegisterOptions{Name: wake.WorkflowName})
	(&wake.Activities{Fire: f}).Register(env)
	var before []time.Time
	env.RegisterDelayedCallback(func() { before = f.times() }, 89*time.Second)
	env.ExecuteWorkflow(wake.WorkflowName, wake.Input{TriggerID: 7, SessionID: 5, FireAt: start.Add(90 * time.Second)})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Empty(t, before, "nothing fired at +89 s")
	require.Equal(t, []time.Time{start.Add(90 * time.Second)}, f.times(), "fired at +90 s")
	var out wake.Outcome
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, wake.OutcomeDelivered, out)
}

func TestADueWatcherFiresAtOnce(t *testing.T) {
	t.Parallel()
	out, f, _ := run(t, wake.Input{TriggerID: 7, SessionID: 5, FireAt: start.Add(-time.Second)}, delivered)
	require.Equal(t, wake.OutcomeDelivered, out)
	require.Equal(t, []time.Time{start}, f.times())
}

func TestACancelledTriggerFiresIntoNothing(t *testing.T) {
	t.Parallel()
	out, f, _ := run(t, wake.Input{TriggerID: 7, SessionID: 5, FireAt: start.Add(time.Minute)}, nothing)
	require.Equal(t, wake.OutcomeNothing, out)
	require.Len(t, f.times(), 1)
}

// TestFireTriggerIsRetriedUntilItSucceeds: a wake must fire, so a failing
// firing (the queue down, an early clock) is retried with backoff.
func TestFireTriggerIsRetriedUntilItSucceeds(t *testing.T) {
	t.Parallel()
	out, f, _ := run(t, wake.Input{TriggerID: 7, SessionID: 5, FireAt: start.Add(time.Minute)},
		failing, failing, failing, failing, failing, failing, failing, func() (app.Fired, error) {
			return app.Fired{Step: domain.FireDeliver, Queued: true}, nil
		})
	require.Equal(t, wake.OutcomeQueued, out)
	times := f.times()
	require.Len(t, times, 8, "retried past the default seven")
	require.True(t, slices.IsSortedFunc(times, time.Time.Compare), "%v", times)
	require.Greater(t, times[len(times)-1].Sub(times[0]), time.Minute, "with backoff: %v", times)
}

func TestAWakeOnAnArchivedSessionIsCancelled(t *testing.T) {
	t.Parallel()
	out, _, _ := run(t, wake.Input{TriggerID: 7, SessionID: 5, FireAt: start}, func() (app.Fired, error) {
		return app.Fired{Step: domain.FireCancel}, nil
	})
	require.Equal(t, wake.OutcomeCancelled, out)
}

// fakeStarter records the workflow starts asked for.
type fakeStarter struct {
	opts []client.StartWorkflowOptions
	args [][]any
	err  error
}

func (f *fakeStarter) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	f.opts, f.args = append(f.opts, o), append(f.args, args)
	return nil, f.err
}

func TestStarterStartsOneWorkflowPerTrigger(t *testing.T) {
	t.Parallel()
	f := &fakeStarter{}
	s := &wake.Starter{Client: f, TaskQueue: "zimmer-lifecycle"}
	fireAt := start.Add(time.Hour)
	payload, err := proto.Marshal(&lifecyclev1.Trigger{Id: 7, SessionId: 5, Kind: "one_time", FireAt: timestamppb.New(fireAt)})
	require.NoError(t, err)
	msg := outbox.Message{Event: outbox.Event{ID: "e1", Topic: events.TopicTriggerArmed, Payload: payload}}

	require.NoError(t, s.Deliver(t.Context(), msg))
	require.Len(t, f.opts, 1)
	require.Equal(t, "session/5/wake/7", f.opts[0].ID)
	require.Equal(t, "zimmer-lifecycle", f.opts[0].TaskQueue)
	require.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE, f.opts[0].WorkflowIDReusePolicy, "a second start is a no-op")
	require.Equal(t, []any{wake.Input{TriggerID: 7, SessionID: 5, FireAt: fireAt}}, f.args[0])

	f.err = serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "")
	require.NoError(t, s.Deliver(t.Context(), msg), "a redelivery of a started trigger is done")

	f.err = errors.New("temporal is down")
	require.Error(t, s.Deliver(t.Context(), msg), "retried by the relay")

	calls := len(f.opts)
	for _, bad := range []outbox.Message{
		{Event: outbox.Event{ID: "e2", Topic: events.TopicSessionUpdated, Payload: payload}},
		{Event: outbox.Event{ID: "e3", Topic: events.TopicTriggerDue, Payload: []byte("not a trigger")}},
		{Event: outbox.Event{ID: "e4", Topic: events.TopicTriggerDue, Payload: nil}},
	} {
		require.Error(t, s.Deliver(t.Context(), bad), bad.ID)
	}
	require.Len(t, f.opts, calls, "nothing started for an event that is not a trigger's")
}
