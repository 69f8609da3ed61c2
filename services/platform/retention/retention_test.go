package retention_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/retention"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// svc is the service the workflow tests register the outbox's retention
// for.
const svc = "lifecycle"

// input is what the schedule passes the outbox's retention runs.
func input(keep time.Duration) periodic.SweepInput {
	return periodic.SweepInput{Sweep: "outbox-retention", Activity: retention.ActivityName(svc, "outbox"), Window: keep, Did: "deleted"}
}

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slogx.Discard()))
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(periodic.SweepWorkflow, workflow.RegisterOptions{Name: retention.WorkflowName(svc, "outbox")})
	env.RegisterActivityWithOptions(outbox.RetentionPolicy(nil, time.Hour).Prune, activity.RegisterOptions{Name: retention.ActivityName(svc, "outbox")})
	return env
}

// The cutoff is the workflow's clock minus the retention: with time mocked,
// exactly a day before the run's start.
func TestWorkflowPrunesWhatWasDeliveredBeforeTheRetention(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(start)
	env.OnActivity(retention.ActivityName(svc, "outbox"), mock.Anything, start.Add(-24*time.Hour)).Return(int64(7), nil).Once()

	env.ExecuteWorkflow(retention.WorkflowName(svc, "outbox"), input(24*time.Hour))
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var got periodic.SweepResult
	require.NoError(t, env.GetWorkflowResult(&got))
	require.Equal(t, periodic.SweepResult{Cutoff: start.Add(-24 * time.Hour), Done: 7}, got)
	env.AssertExpectations(t)
}

// A failing prune (the database is briefly away) is retried after a
// backoff, with the same cutoff.
func TestWorkflowRetriesAFailedPrune(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	env.SetStartTime(start)
	cutoff := start.Add(-time.Hour)
	env.OnActivity(retention.ActivityName(svc, "outbox"), mock.Anything, cutoff).Return(int64(0), errors.New("connection refused")).Once()
	env.OnActivity(retention.ActivityName(svc, "outbox"), mock.Anything, cutoff).Return(int64(3), nil).Once()

	env.ExecuteWorkflow(retention.WorkflowName(svc, "outbox"), input(time.Hour))
	require.NoError(t, env.GetWorkflowError())
	var got periodic.SweepResult
	require.NoError(t, env.GetWorkflowResult(&got))
	require.EqualValues(t, 3, got.Done)
	require.GreaterOrEqual(t, env.Now().Sub(start), time.Second, "the retry waited its backoff")
	env.AssertExpectations(t)
}

func TestWorkflowRefusesANonPositiveRetention(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.ExecuteWorkflow(retention.WorkflowName(svc, "outbox"), input(0))
	require.ErrorContains(t, env.GetWorkflowError(), "must be positive")
	env.AssertNotCalled(t, retention.ActivityName(svc, "outbox"), mock.Anything, mock.Anything)
}

// TestScheduleLeavesOnlyInFlightAndDeadMessages creates the schedule on the
// real Temporal dev server, triggers it, and checks what the outbox holds
// after the run: the undelivered and the dead messages, nothing delivered.
func TestScheduleLeavesOnlyInFlightAndDeadMessages(t *testing.T) {
	t.Parallel()
	addr := servicetest.TemporalAddress(t)
	pool := pgtest.DB(t, outbox.Migrations)
	ctx, cancel := context.WithTimeout(context.Background(), servicetest.Timeout)
	defer cancel()

	// Four deliveries past the retention, one due, one leased, one dead.
	var ids []string
	for range 7 {
		require.NoError(t, pgdb.InTx(ctx, pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
			id, err := outbox.Enqueue(ctx, tx, []string{"a"}, outbox.Event{Topic: "t", AggregateKey: "k", Payload: []byte("p")})
			ids = append(ids, id)
			return err
		}))
	}
	_, err := pool.Exec(ctx, `UPDATE outbox_messages SET delivered_at = now() - interval '25 hours' WHERE event_id = ANY($1::uuid[])`, ids[:4])
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE outbox_messages SET next_attempt_at = now() + interval '1 minute' WHERE event_id = $1`, ids[5])
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE outbox_messages SET dead_at = now() - interval '3 days', last_error = 'refused' WHERE event_id = $1`, ids[6])
	require.NoError(t, err)

	// A service of its own, so the schedule and task queue are this test's
	// alone on the shared server.
	service := "outboxtest-" + uuid.NewString()[:8]
	c, err := temporalx.Dial(ctx, addr, "default", slogx.Discard())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	w := temporalx.NewWorker(c, service)
	require.NoError(t, retention.Setup(ctx, c, w, service, outbox.RetentionPolicy(pool, 24*time.Hour)))
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	handle := c.ScheduleClient().GetHandle(ctx, retention.ScheduleID(service, "outbox"))
	t.Cleanup(func() { _ = handle.Delete(context.Background()) })

	// Starting again (another replica, a restart with a new retention)
	// updates the schedule in place.
	require.NoError(t, retention.Schedule(ctx, c, service, outbox.RetentionPolicy(pool, 24*time.Hour)))
	desc, err := handle.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, time.Hour, desc.Schedule.Spec.Intervals[0].Every)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, temporalx.TaskQueue(service), action.TaskQueue)

	require.NoError(t, handle.Trigger(ctx, client.ScheduleTriggerOptions{}))
	var run client.ScheduleActionResult
	require.Eventually(t, func() bool {
		desc, err := handle.Describe(ctx)
		require.NoError(t, err)
		if len(desc.Info.RecentActions) == 0 {
			return false
		}
		run = desc.Info.RecentActions[0]
		return true
	}, servicetest.Timeout, 100*time.Millisecond, "the trigger started a run")
	var got periodic.SweepResult
	require.NoError(t, c.GetWorkflow(ctx, run.StartWorkflowResult.WorkflowID, run.StartWorkflowResult.FirstExecutionRunID).Get(ctx, &got))
	require.EqualValues(t, 4, got.Done)

	rows, err := pool.Query(ctx, `SELECT event_id::text FROM outbox_messages ORDER BY id`)
	require.NoError(t, err)
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, ids[4:], left, "only in-flight and dead messages remain")
	var delivered int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox_messages WHERE delivered_at IS NOT NULL`).Scan(&delivered))
	require.Zero(t, delivered)
}
