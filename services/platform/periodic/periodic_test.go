package periodic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"

	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

func TestNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "lifecycle-stale-sessions", periodic.ScheduleID("lifecycle", "stale-sessions"))
	require.Equal(t, "zimmer.lifecycle.StaleSessions", periodic.SweepWorkflowName("lifecycle", "stale-sessions"))
	require.Equal(t, "zimmer.lifecycle.StaleSessionsBefore", periodic.SweepActivityName("lifecycle", "stale-sessions"))
	require.Equal(t, "zimmer.notification.Redrive", periodic.SweepWorkflowName("notification", "redrive"))
	require.Equal(t, "zimmer.runner.TranscriptsRetention", periodic.SweepWorkflowName("runner", "transcripts-retention"))
}

// sweepLog runs one sweep whose activity acted on done things and returns
// what the workflow logged at info and above.
func sweepLog(t *testing.T, done int64) []map[string]any {
	t.Helper()
	var out bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(lockedWriter{&mu, &out}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(logger))
	env := suite.NewTestWorkflowEnvironment()
	// The machine is shared and the test runs under -race: a first workflow
	// task may take longer than the default second without a deadlock.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	name := periodic.SweepWorkflowName("lifecycle", "heartbeat")
	activityName := periodic.SweepActivityName("lifecycle", "heartbeat")
	env.RegisterWorkflowWithOptions(periodic.SweepWorkflow, workflow.RegisterOptions{Name: name})
	env.RegisterActivityWithOptions(func(context.Context, time.Time) (int64, error) { return 0, nil },
		activity.RegisterOptions{Name: activityName})
	env.OnActivity(activityName, mock.Anything, mock.Anything).Return(done, nil).Once()

	env.ExecuteWorkflow(name, periodic.SweepInput{Sweep: "heartbeat", Activity: activityName, Window: time.Minute, Did: "nudged"})
	require.NoError(t, env.GetWorkflowError())
	var got periodic.SweepResult
	require.NoError(t, env.GetWorkflowResult(&got))
	require.Equal(t, done, got.Done)

	mu.Lock()
	defer mu.Unlock()
	var lines []map[string]any
	for line := range bytes.Lines(out.Bytes()) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(line, &rec))
		lines = append(lines, rec)
	}
	return lines
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A minutely sweep that found nothing to do says nothing at info: the
// console of `make run` shows what the sweeps did, not that they ran.
func TestASweepThatDidNothingLogsNothingAtInfo(t *testing.T) {
	t.Parallel()
	require.Empty(t, sweepLog(t, 0))
}

func TestASweepThatDidSomethingSaysWhatAtInfo(t *testing.T) {
	t.Parallel()
	lines := sweepLog(t, 3)
	require.Len(t, lines, 1, "%v", lines)
	require.Equal(t, "INFO", lines[0]["level"])
	require.Equal(t, "swept", lines[0]["msg"])
	require.Equal(t, "heartbeat", lines[0]["sweep"])
	require.Equal(t, "nudged", lines[0]["did"])
	require.EqualValues(t, 3, lines[0]["count"])
}

// Two replicas of a service start at once and each sets up the same sweep:
// the dev server holds one schedule, named <service>-<name>, starting the
// workflow type zimmer.<service>.<Name> on the service's task queue, and a
// run of it does the sweep.
func TestConcurrentSetupsLeaveOneScheduleWithTheRightNames(t *testing.T) {
	t.Parallel()
	addr := servicetest.TemporalAddress(t)
	ctx, cancel := context.WithTimeout(context.Background(), servicetest.Timeout)
	defer cancel()

	// A service of its own, so the schedule and task queue are this test's
	// alone on the shared server.
	service := "periodictest" + uuid.NewString()[:8]
	var runs sync.Map
	sweep := periodic.Sweep{Name: "stale-things", Window: time.Hour, Every: time.Hour, Did: "archived",
		Run: func(_ context.Context, cutoff time.Time) (int64, error) {
			runs.Store(cutoff.UnixNano(), true)
			return 2, nil
		}}

	const replicas = 4
	var g errgroup.Group
	workers := make(chan func(), replicas)
	for range replicas {
		g.Go(func() error {
			c, err := temporalx.Dial(ctx, addr, "default", slogx.Discard())
			if err != nil {
				return err
			}
			w := temporalx.NewWorker(c, service)
			if err := periodic.SetupSweep(ctx, c, w, service, sweep); err != nil {
				c.Close()
				return err
			}
			if err := w.Start(); err != nil {
				c.Close()
				return err
			}
			workers <- func() { w.Stop(); c.Close() }
			return nil
		})
	}
	require.NoError(t, g.Wait())
	close(workers)
	for stop := range workers {
		t.Cleanup(stop)
	}

	c, err := temporalx.Dial(ctx, addr, "default", slogx.Discard())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	id := periodic.ScheduleID(service, "stale-things")
	require.Equal(t, service+"-stale-things", id)
	handle := c.ScheduleClient().GetHandle(ctx, id)
	t.Cleanup(func() { _ = handle.Delete(context.Background()) })

	// The list is eventually consistent: wait for it to show ours.
	var ours []string
	require.Eventually(t, func() bool {
		ours = nil
		list, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{})
		require.NoError(t, err)
		for list.HasNext() {
			s, err := list.Next()
			require.NoError(t, err)
			if strings.HasPrefix(s.ID, service) {
				ours = append(ours, s.ID)
			}
		}
		return len(ours) > 0
	}, servicetest.Timeout, 200*time.Millisecond, "the schedule is listed")
	require.Equal(t, []string{id}, ours, "one schedule for the service")

	desc, err := handle.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, time.Hour, desc.Schedule.Spec.Intervals[0].Every)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, "zimmer."+service+".StaleThings", action.Workflow)
	require.Equal(t, id, action.ID)
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
	require.EqualValues(t, 2, got.Done)
	_, ran := runs.Load(got.Cutoff.UnixNano())
	require.True(t, ran, "the run swept before its own cutoff")
}
