package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
	"github.com/zimmerhq/zimmer/services/platform/workflowid"
)

// BenchEnv turns the needs-input push benchmark on (its value, when a
// number above 1, is how many sessions); `make test` leaves it off.
// docs/benchmarks.md ("Notification") has the command and the numbers.
const BenchEnv = "ZIMMER_BENCH_NOTIFY"

// BenchPaceEnv spaces the sessions' pauses (a duration; default 50ms, 20
// a second: a busy fleet's turn ends, not one burst; "0s" is a burst).
const BenchPaceEnv = "ZIMMER_BENCH_NOTIFY_PACE"

// The needs-input push's lateness, on the Temporal dev server: for each of
// n sessions a pause's effect is consumed (as lifecycle's relay delivers
// it) and the push's arrival at a real local webhook is timed; lateness is
// arrival − effect − debounce. Interleaved with the pauses, the same
// number of bare workflows time Temporal's own timer the same way (start
// call → one activity after a workflow.Sleep of the debounce), so both see
// the same server and the same load.
func TestBenchmarkNeedsInputPushLateness(t *testing.T) {
	t.Parallel()
	if os.Getenv(BenchEnv) == "" {
		t.Skip("set " + BenchEnv + "=1 to measure the needs-input push's lateness on the Temporal dev server")
	}
	n := 100
	if v, err := strconv.Atoi(os.Getenv(BenchEnv)); err == nil && v > 1 {
		n = v
	}
	const debounce = 2 * time.Second
	lifecycle := &fakeLifecycle{}
	webhook := newWebhookReceiver(t)
	svc := temporalService(t, lifecycle, webhook, "bench-secret", debounce)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	timer := newBareTimer(t, svc.Temporal)
	consumer := lifecyclev1.NewSessionEventConsumerServiceClient(servicetest.DialAsService(t, svc.Addr(), "lifecycle"))

	pace := 50 * time.Millisecond
	if v := os.Getenv(BenchPaceEnv); v != "" {
		var err error
		pace, err = time.ParseDuration(v)
		require.NoError(t, err, BenchPaceEnv)
	}

	base := testSessionID()
	paused := make(map[int64]time.Time, n)
	next := time.Now()
	for i := range n {
		time.Sleep(time.Until(next))
		next = next.Add(pace)
		timer.start(ctx, t, i, debounce)
		s := &lifecyclev1.Session{Id: base + int64(i), Status: "needs_input", NeedsInputCount: 1, PushNotifications: true}
		lifecycle.set(s)
		paused[s.GetId()] = time.Now()
		_, err := consumer.ConsumeSessionEvent(ctx, effect(needsInputPush(1), s))
		require.NoError(t, err)
	}
	var push, afterCheck []time.Duration
	for range n {
		select {
		case d := <-webhook.delivered:
			var p sink.WebhookPayload
			require.NoError(t, json.Unmarshal(d.body, &p))
			id, err := strconv.ParseInt(p.SessionID, 10, 64)
			require.NoError(t, err)
			at, ok := paused[id]
			require.True(t, ok, "one push for session %d", id)
			delete(paused, id)
			push = append(push, d.at.Sub(at)-debounce)
			lifecycle.mu.Lock()
			afterCheck = append(afterCheck, d.at.Sub(lifecycle.asked[id]))
			lifecycle.mu.Unlock()
		case <-ctx.Done():
			t.Fatalf("%d of %d pushes arrived", len(push), n)
		}
	}
	bare := timer.lateness(ctx, t, debounce)
	// Let every debounce finish (record its push) before the worker stops.
	for i := range n {
		require.NoError(t, svc.Temporal.GetWorkflow(ctx, workflowid.NeedsInputDebounce(base+int64(i)), "").Get(ctx, nil))
	}
	t.Logf("%d sessions pausing %s apart, debounce %s; lateness over the debounce:", n, pace, debounce)
	t.Logf("  Temporal timer (workflow.Sleep, then one activity): %s", summary(bare))
	t.Logf("  pause → push at the webhook:                        %s", summary(push))
	t.Logf("    of which lifecycle asked → webhook:               %s", summary(afterCheck))
	t.Logf("  goal p99 ≤ 1s: %v", percentile(push, 99) <= time.Second)
}

// bareTimer times Temporal's own timer: workflows on a task queue of their
// own that sleep, then run one activity.
type bareTimer struct {
	c       client.Client
	queue   string
	mu      sync.Mutex
	started map[string]time.Time
	fired   map[string]time.Time
	runs    []client.WorkflowRun
}

func newBareTimer(t *testing.T, c client.Client) *bareTimer {
	t.Helper()
	name := ownWorker()
	b := &bareTimer{c: c, queue: temporalx.TaskQueue(name), started: map[string]time.Time{}, fired: map[string]time.Time{}}
	w := temporalx.NewWorker(c, name)
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, d time.Duration) error {
		if err := workflow.Sleep(ctx, d); err != nil {
			return err
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
		return workflow.ExecuteActivity(actx, "bench.Fired", workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, nil)
	}, workflow.RegisterOptions{Name: "bench.Sleep"})
	w.RegisterActivityWithOptions(func(_ context.Context, id string) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.fired[id] = time.Now()
		return nil
	}, activity.RegisterOptions{Name: "bench.Fired"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return b
}

func (b *bareTimer) start(ctx context.Context, t *testing.T, i int, d time.Duration) {
	t.Helper()
	id := fmt.Sprintf("%s/sleep/%d", b.queue, i)
	b.mu.Lock()
	b.started[id] = time.Now()
	b.mu.Unlock()
	run, err := b.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: b.queue}, "bench.Sleep", d)
	require.NoError(t, err)
	b.runs = append(b.runs, run)
}

// lateness waits for every workflow and returns start call → activity,
// less d, for each.
func (b *bareTimer) lateness(ctx context.Context, t *testing.T, d time.Duration) []time.Duration {
	t.Helper()
	for _, run := range b.runs {
		require.NoError(t, run.Get(ctx, nil))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	late := make([]time.Duration, 0, len(b.started))
	for id, at := range b.started {
		late = append(late, b.fired[id].Sub(at)-d)
	}
	return late
}

func summary(ds []time.Duration) string {
	return fmt.Sprintf("p50 %s, p90 %s, p99 %s, max %s", percentile(ds, 50).Round(time.Millisecond),
		percentile(ds, 90).Round(time.Millisecond), percentile(ds, 99).Round(time.Millisecond), slices.Max(ds).Round(time.Millisecond))
}

// percentile is the nearest-rank p-th percentile of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}
