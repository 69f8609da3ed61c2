// Package prwatch is the watch of a session's pull request (LC-34): one
// Temporal workflow per tracked pull request, zimmer.lifecycle.PullRequestWatch
// (id session/<session>/github-pr/<owner>/<repo>/<number>, task queue
// zimmer-lifecycle), which reads the pull request through the
// ReadPullRequest activity at once, then every poll interval — or sooner,
// when a webhook delivery about it signals "read" — until it merges or
// closes, or the session is archived. The pull request's row is the truth:
// what was passed on is saved there after the notices are queued under
// their keys, so a reading retried, replayed or run by a restarted worker
// sends nothing twice.
package prwatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
	"github.com/zimmerhq/zimmer/services/platform/workflowid"
)

// Names in Temporal.
const (
	WorkflowName        = "zimmer.lifecycle.PullRequestWatch"
	ActivityRead        = "zimmer.lifecycle.ReadPullRequest"
	SignalRead          = "read"
	readStartToClose    = time.Minute
	readInitialInterval = time.Second
	readMaximumInterval = time.Minute
	// readingsPerRun bounds one run's history; the watch continues as new.
	readingsPerRun = 500
)

// DefaultInterval is the spec's poll cadence.
const DefaultInterval = 30 * time.Second

// Input starts a watch.
type Input struct {
	SessionID int64
	Owner     string
	Repo      string
	Number    int
	// Interval is the time between two readings without a delivery.
	Interval time.Duration
}

func (in Input) watched() app.WatchedPullRequest {
	return app.WatchedPullRequest{SessionID: in.SessionID, PullRequestRef: rules.PullRequestRef{Owner: in.Owner, Repo: in.Repo, Number: in.Number}}
}

// WorkflowID names a watch's workflow.
func WorkflowID(w app.WatchedPullRequest) string {
	return workflowid.GitHubPullRequest(w.SessionID, w.Owner, w.Repo, w.Number)
}

// Workflow reads the pull request until the reading says the watch is
// over. A reading that fails is retried with backoff, for ever: GitHub
// being down for an hour delays the notices, it does not lose them.
func Workflow(ctx workflow.Context, in Input) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: readStartToClose,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: readInitialInterval, BackoffCoefficient: 2,
			MaximumInterval: readMaximumInterval},
	})
	interval := in.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	read := workflow.GetSignalChannel(ctx, SignalRead)
	for range readingsPerRun {
		var done bool
		if err := workflow.ExecuteActivity(actx, ActivityRead, in).Get(ctx, &done); err != nil {
			return err
		}
		if done {
			return nil
		}
		// Until the interval is up or a delivery asks for a reading now;
		// deliveries that came during the reading are served by the next.
		wait, cancel := workflow.WithCancel(ctx)
		timer := workflow.NewTimer(wait, interval)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) {})
		sel.AddReceive(read, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.Select(ctx)
		cancel()
		for read.ReceiveAsync(nil) {
		}
	}
	return workflow.NewContinueAsNewError(ctx, WorkflowName, in)
}

// Reader is one reading (app.ReadPullRequest).
type Reader interface {
	Handle(ctx context.Context, w app.WatchedPullRequest) (bool, error)
}

// Activities are the workflow's I/O.
type Activities struct{ Read Reader }

// ActivityRegistry is a worker, or the test suite's environment.
type ActivityRegistry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers the activity under its name.
func (a *Activities) Register(r ActivityRegistry) {
	r.RegisterActivityWithOptions(a.ReadPullRequest, activity.RegisterOptions{Name: ActivityRead})
}

// ReadPullRequest reads the pull request once; true when the watch is over.
func (a *Activities) ReadPullRequest(ctx context.Context, in Input) (bool, error) {
	return a.Read.Handle(ctx, in.watched())
}

// TemporalClient is what the Watcher needs of the Temporal client.
type TemporalClient interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// Watcher starts and pokes watches (app.PullRequestWatcher).
type Watcher struct {
	Client    TemporalClient
	TaskQueue string
	Interval  time.Duration
}

var _ app.PullRequestWatcher = (*Watcher)(nil)

// Install registers the workflow and its activity on w (before it starts)
// and returns the Watcher.
func Install(c client.Client, w worker.Worker, service string, read Reader, interval time.Duration) (*Watcher, error) {
	if c == nil || w == nil || read == nil {
		return nil, errors.New("install the pull request watch: a Temporal client, a worker and a reader are required")
	}
	w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	(&Activities{Read: read}).Register(w)
	return &Watcher{Client: c, TaskQueue: temporalx.TaskQueue(service), Interval: interval}, nil
}

// Watch implements app.PullRequestWatcher: a running watch is left as it
// is; one that ended (a session unarchived since) runs again.
func (w *Watcher) Watch(ctx context.Context, pr app.WatchedPullRequest) error {
	in := Input{SessionID: pr.SessionID, Owner: pr.Owner, Repo: pr.Repo, Number: pr.Number, Interval: w.Interval}
	_, err := w.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       WorkflowID(pr),
		TaskQueue:                                w.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowExecutionErrorWhenAlreadyStarted: false,
		Memo:                                     map[string]any{"session_id": pr.SessionID, "pull_request": pr.URL()},
	}, WorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start %s %s: %w", WorkflowName, WorkflowID(pr), err)
	}
	return nil
}

// Poke implements app.PullRequestWatcher.
func (w *Watcher) Poke(ctx context.Context, pr app.WatchedPullRequest) error {
	err := w.Client.SignalWorkflow(ctx, WorkflowID(pr), "", SignalRead, nil)
	var gone *serviceerror.NotFound
	if errors.As(err, &gone) {
		// Its watch ended (merged, closed, archived) since the row said
		// open, or never started: start it, which reads at once.
		return w.Watch(ctx, pr)
	}
	if err != nil {
		return fmt.Errorf("signal %s: %w", WorkflowID(pr), err)
	}
	return nil
}

// Again delivers the transitions out of archived
// (events.SubscriberPullRequestWatches) to app.WatchAgain, in-process:
// the session's open pull requests are watched again (LC-39). A start that
// fails is the relay's to retry.
type Again struct{ WatchAgain *app.WatchAgain }

// Deliver implements outbox.DeliverFunc.
func (a Again) Deliver(ctx context.Context, m outbox.Message) error {
	if m.Topic != events.TopicSessionUpdated {
		return outbox.Reject(fmt.Errorf("the pull requests' watches take %s, not %s", events.TopicSessionUpdated, m.Topic))
	}
	msg, err := events.Decode(m.Payload)
	if err != nil {
		return outbox.Reject(err)
	}
	if msg.GetSessionId() <= 0 {
		return outbox.Reject(fmt.Errorf("event %s names no session", m.ID))
	}
	_, err = a.WatchAgain.Handle(ctx, msg.GetSessionId())
	return err
}
