package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/app/apptest"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/slack"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// flakyBoundary fails its first start, as lifecycle restarting would.
type flakyBoundary struct {
	*apptest.SlackBoundary
	failed bool
}

func (f *flakyBoundary) StartSession(ctx context.Context, user string, spec app.StartSpec) (int64, error) {
	if !f.failed {
		f.failed = true
		return 0, errors.New("lifecycle: unavailable")
	}
	return f.SlackBoundary.StartSession(ctx, user, spec)
}

// The event workflow runs the processing until it succeeds, once, and
// returns what became of the event.
func TestEventWorkflowRetriesUntilProcessed(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	repo := apptest.NewSlack()
	ctx := context.Background()
	_, err := repo.CreateTrigger(ctx, domain.SlackTrigger{Channel: "C1", AllowedUserIDs: []string{"U1"}, GitRoot: "/r"})
	require.NoError(t, err)
	payload, err := json.Marshal(map[string]any{"type": "event_callback", "event_id": "Ev1",
		"event": map[string]any{"type": "message", "user": "U1", "text": "go", "channel": "C1", "ts": "1.2"}})
	require.NoError(t, err)
	_, err = repo.AcceptEvent(ctx, domain.SlackEvent{EventID: "Ev1", Payload: payload})
	require.NoError(t, err)
	boundary := &apptest.SlackBoundary{}
	slack.Register(env, &slack.Activities{Process: app.ProcessSlackEvent{
		Repo: repo, Boundary: &flakyBoundary{SlackBoundary: boundary}, Clock: clock.System{},
	}})

	env.ExecuteWorkflow(slack.EventWorkflowName, "Ev1")
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var outcome string
	require.NoError(t, env.GetWorkflowResult(&outcome))
	require.Equal(t, "started session 1 (trigger #1)", outcome)
	require.Len(t, boundary.Sessions, 1)
	require.Equal(t, "slack/event/Ev1", slack.EventWorkflowID("Ev1"))
}

// An event whose processing is given up pages an operator, keyed by the
// event, and the workflow fails naming it.
func TestAnEventGivenUpPages(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	alerts := &apptest.Alerts{}
	slack.Register(env, &slack.Activities{Raise: app.RaiseAlert{Repo: alerts, Pager: nopPager{}, Clock: clock.System{}, Window: time.Hour}})
	env.OnActivity(slack.ActivityProcessEvent, mock.Anything, "Ev9").
		Return("", temporal.NewNonRetryableApplicationError("lineage refused", "refused", nil))

	env.ExecuteWorkflow(slack.EventWorkflowName, "Ev9")
	require.True(t, env.IsWorkflowCompleted())
	require.ErrorContains(t, env.GetWorkflowError(), "process slack event Ev9")
	got, err := alerts.List(context.Background(), 10)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "slack/event/Ev9", got[0].DedupKey)
	require.Contains(t, got[0].Summary, "Slack event Ev9 was acknowledged but could not be processed")
}

type nopPager struct{}

func (nopPager) Page(context.Context, domain.Alert) error { return nil }
