package service_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// TestRunnerHandOverLatency measures (docs/benchmarks.md, "Runner") how soon
// a turn the queue hands over at a clean exit starts, next to how soon a
// requested turn starts, in the same run on one runner node: the real
// Temporal dev server, the demo agent, and in-process fakes of lifecycle and
// the queue. It runs only when asked: ZIMMER_BENCH_RUNNER=1.
//
// One session; after its first turn and 5 unmeasured cycles, each of
// ZIMMER_BENCH_RUNNER_TURNS (200) cycles asks for a turn through the
// consumer (as lifecycle's relay does for a restart or a delivered message)
// and waits for the pause; the queue hands one message over at that turn's
// clean exit and has nothing after the handed-over turn. Timestamps, one
// host and one clock:
//   - requested: the client's clock before ConsumeSessionEvent;
//   - started: transcript_turns.started_at, Postgres's now() when the
//     runner stored the agent's first line (the process is running);
//   - exit: the requested turn's last stored line (the agent's result line,
//     printed just before it exits);
//   - ended: transcript_turns.ended_at, the runner reaped the process.
func TestRunnerHandOverLatency(t *testing.T) {
	if os.Getenv("ZIMMER_BENCH_RUNNER") != "1" {
		t.Skip("runner measurement: set ZIMMER_BENCH_RUNNER=1 (minutes; see docs/benchmarks.md)")
	}
	turns := 200
	if v := os.Getenv("ZIMMER_BENCH_RUNNER_TURNS"); v != "" {
		var err error
		turns, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	const warmUp = 5
	n := startNode(t, func(from string) *queuev1.DeliverNextMessageResponse {
		if i, ok := strings.CutPrefix(from, "bench/request-"); ok {
			return &queuev1.DeliverNextMessageResponse{Delivered: true, JobId: "bench/handover-" + i, Prompt: "@demo say handed over"}
		}
		return nil
	})
	id := newSessionID()
	n.create(t, id, "@demo say warming up")
	waitPauses := func(want int) {
		require.Eventually(t, func() bool { return n.lifecycle.count(id, rw.EventPause) >= want },
			60*time.Second, 2*time.Millisecond, "pause %d never came", want)
	}
	waitPauses(1)
	requested := make([]time.Time, warmUp+turns)
	began := time.Now()
	for i := range requested {
		requested[i] = time.Now()
		n.resume(t, id, fmt.Sprintf("bench-%d-%d", id, i), fmt.Sprintf("bench/request-%d", i), "@demo say measuring the runner")
		waitPauses(i + 2)
	}
	t.Logf("%d cycles in %s", len(requested), time.Since(began).Round(time.Second))
	require.Equal(t, warmUp+turns+1, n.lifecycle.count(id, rw.EventPause), "one pause per cycle, none between a turn and its hand-over")

	type turnTimes struct{ started, lastLine, ended time.Time }
	rows, err := n.svc.Pool.Query(t.Context(), `
		SELECT t.turn_id, t.started_at, t.ended_at, (SELECT max(l.created_at) FROM transcript_lines l WHERE l.turn_id = t.turn_id)
		FROM transcript_turns t WHERE t.session_id = $1`, id)
	require.NoError(t, err)
	times := map[string]turnTimes{}
	for rows.Next() {
		var turn string
		var tt turnTimes
		require.NoError(t, rows.Scan(&turn, &tt.started, &tt.ended, &tt.lastLine))
		times[turn] = tt
	}
	require.NoError(t, rows.Err())

	var toStarted, exitToStarted, endedToStarted, acrossRuns, withinRun []time.Duration
	for i := warmUp; i < len(requested); i++ {
		req, ok := times[fmt.Sprintf("bench/request-%d", i)]
		require.True(t, ok, "turn %d ran", i)
		next, ok := times[fmt.Sprintf("bench/handover-%d", i)]
		require.True(t, ok, "turn %d's successor was handed over", i)
		toStarted = append(toStarted, req.started.Sub(requested[i]))
		exitToStarted = append(exitToStarted, next.started.Sub(req.lastLine))
		endedToStarted = append(endedToStarted, next.started.Sub(req.ended))
		// The session's turn 1 was the first; request-i is turn 2i+2. A run
		// ends after every DefaultTurnsPerRun-th turn, so a hand-over after
		// such a turn is run by the next run.
		if (2*i+2)%rw.DefaultTurnsPerRun == 0 {
			acrossRuns = append(acrossRuns, next.started.Sub(req.lastLine))
		} else {
			withinRun = append(withinRun, next.started.Sub(req.lastLine))
		}
	}
	base, handOver := newDist(toStarted), newDist(exitToStarted)
	t.Logf("over %d requested turns and %d handed-over turns of one session (continue-as-new every %d turns):",
		len(toStarted), len(exitToStarted), rw.DefaultTurnsPerRun)
	t.Logf("| interval | p50 | p99 | max |")
	t.Logf("|---|---|---|---|")
	t.Logf("| turn request → process started (baseline) | %s | %s | %s |", base.p(50), base.p(99), base.p(100))
	t.Logf("| agent exit → handed-over turn's process started | %s | %s | %s |", handOver.p(50), handOver.p(99), handOver.p(100))
	t.Logf("| of which: turn ended (reaped) → next started | %s | %s | %s |",
		newDist(endedToStarted).p(50), newDist(endedToStarted).p(99), newDist(endedToStarted).p(100))
	t.Logf("| of which: %d within a run | %s | %s | %s |", len(withinRun),
		newDist(withinRun).p(50), newDist(withinRun).p(99), newDist(withinRun).p(100))
	t.Logf("| of which: %d across a continue-as-new | %s | %s | %s |", len(acrossRuns),
		newDist(acrossRuns).p(50), newDist(acrossRuns).p(99), newDist(acrossRuns).p(100))
	t.Logf("| **hand-over − baseline** | **%s** | **%s** | |", handOver.p(50)-base.p(50), handOver.p(99)-base.p(99))
	t.Logf("| **ratio** | **%.2f×** | **%.2f×** | |", ratio(handOver, base, 50), ratio(handOver, base, 99))
}

// dist is a sorted sample; p is its nearest-rank percentile.
type dist []time.Duration

func newDist(d []time.Duration) dist {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}

func (d dist) p(q int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := (q*len(d) + 99) / 100 // ceil(q/100 · n), 1-based
	return d[max(i, 1)-1].Round(10 * time.Microsecond)
}

func ratio(a, b dist, q int) float64 { return float64(a.p(q)) / float64(b.p(q)) }
