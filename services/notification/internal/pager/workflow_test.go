package pager_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/zimmerhq/zimmer/services/notification/internal/pager"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
)

// fakeSink answers each Send with the next of its errors (nil once they run
// out) and records what it was asked to deliver.
type fakeSink struct {
	name string
	mu   sync.Mutex
	errs []error
	sent []sink.Message
}

func (s *fakeSink) Name() string { return s.name }

func (s *fakeSink) Send(_ context.Context, m sink.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, m)
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

func TestPageAlertRetriesAFailingSinkAndDeliversTheOthers(t *testing.T) {
	t.Parallel()
	transient := &sink.Error{Sink: "webhook", Retryable: true, Err: errors.New("503 Service Unavailable")}
	flaky := &fakeSink{name: "webhook", errs: []error{transient, transient, transient}}
	refused := &fakeSink{name: "slack", errs: []error{&sink.Error{Sink: "slack", Err: errors.New("404 no_service")}}}
	steady := &fakeSink{name: "log"}

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	pager.Register(env, []sink.Sink{flaky, refused, steady})
	msg := sink.Message{Kind: sink.KindAlert, Title: "cleanup failed", DedupKey: "alert/7", Time: time.Unix(1, 0).UTC()}
	start := env.Now()
	env.ExecuteWorkflow(pager.WorkflowName, pager.Page{AlertID: 7, Sinks: []string{"webhook", "slack", "log"}, Message: msg})

	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.Error(t, err, "a sink that gave up fails the page, visibly")
	require.Contains(t, err.Error(), "sink slack")
	require.NotContains(t, err.Error(), "sink webhook", "the transient failures were retried into a delivery")

	require.Equal(t, 4, flaky.attempts(), "three transient failures, then delivered")
	require.Equal(t, 1, refused.attempts(), "a permanent refusal is not retried")
	require.Equal(t, 1, steady.attempts(), "a failing sink does not stop the others")
	require.Equal(t, msg, steady.sent[0])
	require.GreaterOrEqual(t, env.Now().Sub(start), 7*time.Second, "backoff 1 s, 2 s, 4 s on the mocked clock")
}

func TestPageAlertGivesUpAfterTheBoundedRetries(t *testing.T) {
	t.Parallel()
	down := make([]error, 100)
	for i := range down {
		down[i] = errors.New("connection refused") // unclassified counts as transient
	}
	dead := &fakeSink{name: "ntfy", errs: down}

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	pager.Register(env, []sink.Sink{dead})
	env.ExecuteWorkflow(pager.WorkflowName, pager.Page{AlertID: 8, Sinks: []string{"ntfy"}})

	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError())
	require.EqualValues(t, pager.RetryPolicy.MaximumAttempts, dead.attempts())
}

func TestDeliverMarksPermanentFailuresNonRetryable(t *testing.T) {
	t.Parallel()
	d := pager.Deliverer{Sinks: []sink.Sink{
		&fakeSink{name: "slack", errs: []error{&sink.Error{Sink: "slack", Err: errors.New("400")}}},
		&fakeSink{name: "webhook", errs: []error{&sink.Error{Sink: "webhook", Retryable: true, Err: errors.New("502")}}},
	}}
	var appErr *temporal.ApplicationError

	err := d.Deliver(context.Background(), "slack", sink.Message{})
	require.ErrorAs(t, err, &appErr)
	require.True(t, appErr.NonRetryable())

	err = d.Deliver(context.Background(), "webhook", sink.Message{})
	require.Error(t, err)
	require.False(t, errors.As(err, &appErr), "a transient failure is left for Temporal to retry")

	err = d.Deliver(context.Background(), "email", sink.Message{})
	require.ErrorAs(t, err, &appErr, "a sink the worker lacks cannot succeed on retry")
	require.True(t, appErr.NonRetryable())
}
