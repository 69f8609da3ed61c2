package wake_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/clients"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wake"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// BenchEnv turns the wake lateness benchmark on (its value, when a number
// above 1, is how many wakes); `make test` leaves it off.
// docs/benchmarks.md ("Triggers") has the command and the numbers.
const BenchEnv = "ZIMMER_BENCH_TRIGGERS"

// BenchLeadEnv is how far ahead of the arming the shared second is
// (default 60s): every wake's workflow must be started before it.
const BenchLeadEnv = "ZIMMER_BENCH_TRIGGERS_LEAD"

// TestBenchmarkWakeLateness arms n wakes for the same second — through
// WakeMeUpLater on n needs_input sessions, each Wake workflow started by
// the in-process relay from its arming's outbox event — and times each
// wake's FollowUp at a fake queue against that second. In the same run n
// bare workflows on a worker of their own sleep to the same second and
// record when their one activity runs: Temporal's own timer's lateness.
func TestBenchmarkWakeLateness(t *testing.T) {
	t.Parallel()
	if os.Getenv(BenchEnv) == "" {
		t.Skip("set " + BenchEnv + "=1 to measure the lateness of wakes armed for the same second on the Temporal dev server")
	}
	n := 1000
	if v, err := strconv.Atoi(os.Getenv(BenchEnv)); err == nil && v > 1 {
		n = v
	}
	lead := 60 * time.Second
	if v := os.Getenv(BenchLeadEnv); v != "" {
		var err error
		lead, err = time.ParseDuration(v)
		require.NoError(t, err, BenchLeadEnv)
	}
	addr := servicetest.TemporalAddress(t)
	ns := servicetest.TemporalNamespace(t, addr)
	ctx, cancel := context.WithTimeout(t.Context(), lead+5*time.Minute)
	defer cancel()
	logger := slogx.Discard()
	c, err := temporalx.Dial(ctx, addr, ns, logger)
	require.NoError(t, err)
	t.Cleanup(c.Close)

	pool := pgtest.DB(t, inbox.Migrations, outbox.Migrations, store.Migrations)
	signal := &outbox.Signal{}
	repo := store.NewSessions(pool, events.Codec{}, signal, logger)
	sessions := app.NewSessions(repo, clock.System{}, app.DefaultTrashRetention)
	ids := make([]int64, n)
	parallel(t, n, func(i int) error {
		s, err := sessions.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g"})
		if err != nil {
			return err
		}
		ids[i] = s.ID
		for _, e := range []domain.Event{domain.EventStart, domain.EventPause} {
			if _, err := sessions.Transition.Fire(ctx, strconv.FormatInt(s.ID, 10), string(e), domain.Command{}); err != nil {
				return err
			}
		}
		return nil
	})

	queue, queueClient := startFakeQueue(t)
	w := temporalx.NewWorker(c, "lifecycle")
	starter, err := wake.Install(c, w, "lifecycle", app.FireTrigger{
		Repo: repo, Clock: clock.System{}, Delivery: clients.Queue{Client: queueClient, Timeout: 10 * time.Second},
	})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	relay := &outbox.Relay{Pool: pool, Subscriber: events.SubscriberTriggers, Deliver: starter.Deliver, Signal: signal,
		Logger: logger, PollInterval: 50 * time.Millisecond}
	relayCtx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(relayCtx) }()
	t.Cleanup(func() { stopRelay(); require.NoError(t, <-relayDone) })
	timer := newBareTimer(t, c)

	second := time.Now().Add(lead + time.Second).Truncate(time.Second)
	armed := time.Now()
	triggers := app.NewTriggers(repo, sessions)
	parallel(t, n, func(i int) error {
		if err := timer.start(ctx, i, second); err != nil {
			return err
		}
		_, err := triggers.WakeMeUpLater(ctx, strconv.FormatInt(ids[i], 10), domain.WakeRequest{WakeAt: second.UTC().Format(time.RFC3339)}, domain.Actor{})
		return err
	})
	armedIn := time.Since(armed)
	require.Eventually(t, func() bool {
		var left int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox_messages WHERE subscriber = 'triggers' AND delivered_at IS NULL`).Scan(&left))
		return left == 0
	}, time.Until(second), 100*time.Millisecond, "every wake's workflow started before the second")
	startedIn := time.Since(armed)

	require.Eventually(t, func() bool { return len(queue.recorded()) >= n }, 3*time.Minute, 100*time.Millisecond,
		"every wake fired")
	wakes := make([]time.Duration, 0, n)
	seen := map[string]bool{}
	for _, f := range queue.recorded() {
		require.False(t, seen[f.req.GetIdempotencyKey()], "one delivery per wake")
		seen[f.req.GetIdempotencyKey()] = true
		wakes = append(wakes, f.at.Sub(second))
	}
	bare := timer.lateness(ctx, t, second)
	require.GreaterOrEqual(t, slices.Min(wakes), time.Duration(0), "never early")
	t.Logf("%d wakes armed for %s in %s, every workflow started %s after the first arming", n, second.Format(time.TimeOnly),
		armedIn.Round(time.Millisecond), startedIn.Round(time.Millisecond))
	t.Logf("  Temporal timer (sleep to the second, then one activity): %s", summary(bare))
	t.Logf("  wake → FollowUp at the queue:                            %s", summary(wakes))
	t.Logf("  goal p99 ≤ 1s: %v", percentile(wakes, 99) <= time.Second)
	// Where the lateness is: when the server fired each timer (its
	// TimerFired event), for a sample of both kinds of workflow.
	var bareFired, wakeFired []time.Duration
	fired := queue.recorded()
	for i := 0; i < n; i += max(n/50, 1) {
		bareFired = append(bareFired, timerFired(ctx, t, c, fmt.Sprintf("bench/sleep/%d", i)).Sub(second))
		req := fired[i].req
		sid, err := strconv.ParseInt(req.GetSessionId(), 10, 64)
		require.NoError(t, err)
		tid, err := strconv.ParseInt(strings.TrimPrefix(req.GetIdempotencyKey(), "trigger/"), 10, 64)
		require.NoError(t, err)
		wakeFired = append(wakeFired, timerFired(ctx, t, c, wake.WorkflowID(sid, tid)).Sub(second))
	}
	t.Logf("  the server's TimerFired (sample of %d): bare %s; wake %s", len(bareFired), summary(bareFired), summary(wakeFired))
}

// timerFired is when the server fired the timer of workflow id.
func timerFired(ctx context.Context, t *testing.T, c client.Client, id string) time.Time {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if e.GetEventType() == enumspb.EVENT_TYPE_TIMER_FIRED {
			return e.GetEventTime().AsTime()
		}
	}
	t.Fatalf("workflow %s has no fired timer", id)
	return time.Time{}
}

// parallel runs do for 0..n-1 on 8 goroutines.
func parallel(t *testing.T, n int, do func(i int) error) {
	t.Helper()
	var (
		wg   sync.WaitGroup
		next = make(chan int)
		errs = make(chan error, n)
	)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					errs <- fmt.Errorf("%d: %w", i, err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// bareTimer times Temporal's own timer: workflows on a task queue of their
// own that sleep to a moment, then run one activity.
type bareTimer struct {
	c     client.Client
	queue string
	mu    sync.Mutex
	fired map[string]time.Time
	runs  []client.WorkflowRun
}

func newBareTimer(t *testing.T, c client.Client) *bareTimer {
	t.Helper()
	b := &bareTimer{c: c, queue: temporalx.TaskQueue("bench-timer"), fired: map[string]time.Time{}}
	w := temporalx.NewWorker(c, "bench-timer")
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, at time.Time) error {
		if err := workflow.Sleep(ctx, at.Sub(workflow.Now(ctx))); err != nil {
			return err
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
		return workflow.ExecuteActivity(actx, "bench.Fired", workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, nil)
	}, workflow.RegisterOptions{Name: "bench.SleepUntil"})
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

func (b *bareTimer) start(ctx context.Context, i int, at time.Time) error {
	run, err := b.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("bench/sleep/%d", i), TaskQueue: b.queue},
		"bench.SleepUntil", at)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs = append(b.runs, run)
	return nil
}

// lateness waits for every workflow and returns activity − at for each.
func (b *bareTimer) lateness(ctx context.Context, t *testing.T, at time.Time) []time.Duration {
	t.Helper()
	for _, run := range b.runs {
		require.NoError(t, run.Get(ctx, nil))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	late := make([]time.Duration, 0, len(b.fired))
	for _, f := range b.fired {
		late = append(late, f.Sub(at))
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
