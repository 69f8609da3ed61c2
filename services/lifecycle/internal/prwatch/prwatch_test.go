package prwatch_test

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

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/prwatch"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// fakeReader answers readings from a script (true: the watch is over) and
// records when it was asked, by the environment's clock.
type fakeReader struct {
	now     func() time.Time
	mu      sync.Mutex
	answers []func() (bool, error)
	at      []time.Time
}

func (f *fakeReader) Handle(_ context.Context, w app.WatchedPullRequest) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.SessionID != 5 || w.String() != "acme/app#7" {
		return false, errors.New("read another pull request")
	}
	f.at = append(f.at, f.now().UTC())
	if len(f.answers) == 0 {
		return true, nil
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	return a()
}

func (f *fakeReader) times() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.at...)
}

func open() (bool, error)    { return false, nil }
func failing() (bool, error) { return false, errors.New("GitHub answered 502") }

var start = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

var input = prwatch.Input{SessionID: 5, Owner: "acme", Repo: "app", Number: 7, Interval: 30 * time.Second}

func newEnv(t *testing.T, answers ...func() (bool, error)) (*testsuite.TestWorkflowEnvironment, *fakeReader) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slogx.Discard()))
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	f := &fakeReader{now: env.Now, answers: answers}
	env.RegisterWorkflowWithOptions(prwatch.Workflow, workflow.RegisterOptions{Name: prwatch.WorkflowName})
	(&prwatch.Activities{Read: f}).Register(env)
	return env, f
}

// TestAWatchPollsAtItsInterval: read at once, then every 30 s, until a
// reading says the watch is over.
func TestAWatchPollsAtItsInterval(t *testing.T) {
	t.Parallel()
	env, f := newEnv(t, open, open, open)
	env.ExecuteWorkflow(prwatch.WorkflowName, input)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []time.Time{start, start.Add(30 * time.Second), start.Add(60 * time.Second), start.Add(90 * time.Second)}, f.times())
}

// TestADeliveryReadsAtOnce: a webhook delivery's signal reads the pull
// request at once instead of at the next poll, and the poll goes on from
// there.
func TestADeliveryReadsAtOnce(t *testing.T) {
	t.Parallel()
	env, f := newEnv(t, open, open, open)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(prwatch.SignalRead, nil) }, 5*time.Second)
	env.ExecuteWorkflow(prwatch.WorkflowName, input)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []time.Time{start, start.Add(5 * time.Second), start.Add(35 * time.Second), start.Add(65 * time.Second)}, f.times())
}

// TestAFailedReadingIsRetried: GitHub down delays a reading; it is not
// lost, and the watch goes on.
func TestAFailedReadingIsRetried(t *testing.T) {
	t.Parallel()
	env, f := newEnv(t, failing, failing, open)
	env.ExecuteWorkflow(prwatch.WorkflowName, input)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, f.times(), 4, "two failures retried, then open, then over")
}

func TestWorkflowIDIsUnderTheSession(t *testing.T) {
	t.Parallel()
	w := app.WatchedPullRequest{SessionID: 5}
	w.Owner, w.Repo, w.Number = "acme", "app", 7
	require.Equal(t, "session/5/github-pr/acme/app/7", prwatch.WorkflowID(w))
}
