package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/pager"
	"github.com/zimmerhq/zimmer/services/notification/internal/push"
	"github.com/zimmerhq/zimmer/services/notification/internal/service"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/notification/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// startsOf lists the workflow ids c was asked to start, in order.
func startsOf(c *mocks.Client) []string {
	var ids []string
	for _, call := range c.Calls {
		if call.Method == "ExecuteWorkflow" {
			ids = append(ids, call.Arguments.Get(1).(client.StartWorkflowOptions).ID)
		}
	}
	return ids
}

// The re-drive's activity, as the schedule runs it, on Postgres and the
// real pager and push starter: a page and a push that never started are
// started once; what was recorded started, and a needs_input notification
// (its debounce's), are not; a start that finds its workflow started
// (the process died between the start and its record) records it.
func TestRedriveActivityStartsWhatNeverStartedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.DB(t, service.MigrationSets...)
	alerts, notifications := store.NewAlerts(pool), store.NewNotifications(pool)
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)

	raise := func(key string) domain.Alert {
		a, opened, err := alerts.Raise(ctx, domain.Raise{DedupKey: key, Summary: key}.Open(t0, time.Hour))
		require.NoError(t, err)
		require.True(t, opened)
		return a
	}
	keep := func(n domain.Notification) domain.Notification {
		got, created, err := notifications.Create(ctx, n)
		require.NoError(t, err)
		require.True(t, created)
		return got
	}
	lostPage, pagedPage, lostRecord := raise("lost"), raise("paged"), raise("start not recorded")
	require.NoError(t, alerts.MarkPagingStarted(ctx, pagedPage.ID, t0))
	lostPush := keep(domain.Failure(domain.Session{ID: 4}, "boom", "ev-1", t0))
	startedPush := keep(domain.AgentMessage{Title: "started"}.Notification(t0))
	require.NoError(t, notifications.MarkPushStarted(ctx, startedPush.ID, t0))
	lostPushRecord := keep(domain.AgentMessage{Title: "start not recorded"}.Notification(t0))
	keep(domain.NeedsInput(domain.Session{ID: 4}, 1, t0))

	c := &mocks.Client{}
	alreadyStarted := serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "run-1")
	for id, err := range map[string]error{
		pager.WorkflowID(lostPage.ID): nil, pager.WorkflowID(lostRecord.ID): alreadyStarted,
		push.PushWorkflowID(lostPush.ID): nil, push.PushWorkflowID(lostPushRecord.ID): alreadyStarted,
	} {
		c.On("ExecuteWorkflow", mock.Anything, mock.MatchedBy(func(o client.StartWorkflowOptions) bool { return o.ID == id }), mock.Anything, mock.Anything).
			Return(nil, err)
	}
	sinks := []sink.Sink{sink.Log{Logger: slogx.Discard()}}
	redrive := app.NewRedrive(alerts, notifications,
		pager.NewTemporal(c, service.Name, sinks, nil, slogx.Discard()),
		push.NewStarter(c, "zimmer-notification", sinks, time.Minute), clock.System{})
	policy := service.RedriveSweep(redrive)
	require.Equal(t, "notification-redrive", periodic.ScheduleID(service.Name, policy.Name))
	require.Equal(t, app.RedriveAfter, policy.Window, "runs every minute, for what is a minute old")

	started, err := policy.Run(ctx, time.Now().Add(-app.RedriveAfter))
	require.NoError(t, err)
	require.EqualValues(t, 4, started)
	require.ElementsMatch(t, []string{
		pager.WorkflowID(lostPage.ID), pager.WorkflowID(lostRecord.ID),
		push.PushWorkflowID(lostPush.ID), push.PushWorkflowID(lostPushRecord.ID),
	}, startsOf(c), "each once; nothing recorded started, and no needs_input")

	started, err = policy.Run(ctx, time.Now().Add(-app.RedriveAfter))
	require.NoError(t, err)
	require.Zero(t, started, "all recorded started, the already started too")
	require.Len(t, startsOf(c), 4)
	var unstarted int
	require.NoError(t, pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM alerts WHERE paging_started_at IS NULL) +
		(SELECT count(*) FROM notifications WHERE push_started_at IS NULL AND type <> 'needs_input')`).Scan(&unstarted))
	require.Zero(t, unstarted)
}

// On the real Temporal dev server, in a namespace of the test's own (so the
// schedule is the service's own notification-redrive): the first start of
// every page and push fails, and an agent's message is stored but its
// start lost (the process died). The raise still answers paged and the
// failure's effect Unavailable; once the rows are a minute old, the
// schedule's run starts each, and each reaches the webhook once.
func TestRedriveDeliversWhatFailedToStartThroughTemporal(t *testing.T) {
	t.Parallel()
	const secret = "redrive-secret"
	webhook := newWebhookReceiver(t)
	addr := servicetest.TemporalAddress(t)
	cfg := testConfig(t)
	cfg.TemporalAddress = addr
	cfg.TemporalNamespace = servicetest.TemporalNamespace(t, addr)
	cfg.Sinks.AlertRoute = []string{"webhook"}
	cfg.Sinks.PushRoute = []string{"webhook"}
	cfg.Sinks.WebhookURL = webhook.URL
	cfg.Sinks.WebhookSecret = secret
	var (
		mu    sync.Mutex
		tried = map[string]int{}
	)
	cfg.BeforeStart = func(workflowID string) error {
		mu.Lock()
		defer mu.Unlock()
		tried[workflowID]++
		if tried[workflowID] == 1 {
			return serviceerror.NewUnavailable("temporal is restarting")
		}
		return nil
	}
	svc := newTemporalService(t, cfg)
	servicetest.RunInBackground(t, svc.Run)
	ctx, cancel := context.WithTimeout(context.Background(), 2*servicetest.Timeout)
	defer cancel()

	raised, err := notificationv1.NewNotificationServiceClient(servicetest.DialAsService(t, svc.Addr(), "lifecycle")).
		RaiseAlert(ctx, &notificationv1.RaiseAlertRequest{DedupKey: "relay", Summary: "relay is stuck"})
	require.NoError(t, err)
	require.True(t, raised.GetPaged(), "the raise is answered; its page is the re-drive's")
	consumer := lifecyclev1.NewSessionEventConsumerServiceClient(servicetest.DialAsService(t, svc.Addr(), "lifecycle"))
	failed := &lifecyclev1.Session{Id: 4, Title: "Port the parser", Status: "failed"}
	_, err = consumer.ConsumeSessionEvent(ctx, effect(failurePush("exit 1"), failed))
	require.Equal(t, codes.Unavailable, status.Code(err), "lifecycle keeps the effect: %v", err)
	var lostMessage int64
	require.NoError(t, svc.Pool.QueryRow(ctx, `INSERT INTO notifications (type, session_id, title) VALUES ('agent_message', 4, 'Tests are green') RETURNING id`).Scan(&lostMessage))
	require.Empty(t, webhook.delivered, "nothing started")

	// A minute passes.
	_, err = svc.Pool.Exec(ctx, `UPDATE alerts SET first_seen_at = first_seen_at - interval '2 minutes'`)
	require.NoError(t, err)
	_, err = svc.Pool.Exec(ctx, `UPDATE notifications SET created_at = created_at - interval '2 minutes'`)
	require.NoError(t, err)
	var failure int64
	require.NoError(t, svc.Pool.QueryRow(ctx, `SELECT id FROM notifications WHERE type = 'failure'`).Scan(&failure))

	schedule := svc.Temporal.ScheduleClient().GetHandle(ctx, "notification-redrive")
	require.NoError(t, schedule.Trigger(ctx, client.ScheduleTriggerOptions{}))
	got := map[string]sink.WebhookPayload{}
	for len(got) < 3 {
		select {
		case d := <-webhook.delivered:
			require.NoError(t, sink.VerifyWebhook([]byte(secret), d.header, d.body, time.Now(), time.Minute))
			var p sink.WebhookPayload
			require.NoError(t, json.Unmarshal(d.body, &p))
			require.NotContains(t, got, p.DedupKey, "delivered once")
			got[p.DedupKey] = p
		case <-ctx.Done():
			t.Fatalf("the re-drive delivered only %v", got)
		}
	}
	alertKey := fmt.Sprintf("alert/%d", raised.GetAlert().GetId())
	require.Equal(t, "relay is stuck", got[alertKey].Title)
	require.Equal(t, sink.KindAlert, got[alertKey].Kind)
	require.Equal(t, "Session 4 failed: Port the parser", got[fmt.Sprintf("notification/%d", failure)].Title)
	require.Equal(t, "Session 4: Tests are green", got[fmt.Sprintf("notification/%d", lostMessage)].Title)

	// Every workflow ended, each recorded started; a later run starts
	// nothing more.
	for _, id := range []string{alertKey, push.PushWorkflowID(failure), push.PushWorkflowID(lostMessage)} {
		require.NoError(t, svc.Temporal.GetWorkflow(ctx, id, "").Get(ctx, nil), id)
	}
	var unstarted int
	require.NoError(t, svc.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM alerts WHERE paging_started_at IS NULL) +
		(SELECT count(*) FROM notifications WHERE push_started_at IS NULL)`).Scan(&unstarted))
	require.Zero(t, unstarted)
	runs := func() map[string]client.ScheduleActionResult {
		desc, err := schedule.Describe(ctx)
		require.NoError(t, err)
		out := map[string]client.ScheduleActionResult{}
		for _, a := range desc.Info.RecentActions {
			out[a.StartWorkflowResult.WorkflowID] = a
		}
		return out
	}
	before := runs()
	require.NoError(t, schedule.Trigger(ctx, client.ScheduleTriggerOptions{}))
	var later []client.ScheduleActionResult
	require.Eventually(t, func() bool {
		later = later[:0]
		for id, a := range runs() {
			if _, seen := before[id]; !seen {
				later = append(later, a)
			}
		}
		return len(later) > 0
	}, servicetest.Timeout, 100*time.Millisecond, "the trigger started a run")
	for _, a := range later {
		var result periodic.SweepResult
		require.NoError(t, svc.Temporal.GetWorkflow(ctx, a.StartWorkflowResult.WorkflowID, a.StartWorkflowResult.FirstExecutionRunID).Get(ctx, &result))
		require.Zero(t, result.Done, "nothing left to start")
	}
	require.Empty(t, webhook.delivered)
}
