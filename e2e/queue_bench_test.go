package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The queue's measurement (docs/benchmarks.md, "Queue"). It starts a whole
// stack whose sessions really run and drives hundreds of turns through it,
// so it runs only when asked: ZIMMER_BENCH_QUEUE=1.

// turnsPerRun is after how many turns a session's workflow continues as new
// (the runner's workflow.DefaultTurnsPerRun): a hand-over from such a turn
// is run by the next run, one more workflow task.
const turnsPerRun = 50

func requireQueueBench(t *testing.T) {
	t.Helper()
	if os.Getenv("ZIMMER_BENCH_QUEUE") != "1" {
		t.Skip("queue measurement: set ZIMMER_BENCH_QUEUE=1 (minutes; see docs/benchmarks.md)")
	}
}

// TestQueueHandOverLatency measures the queue's hot path on the real
// stack: how soon, after an agent exits, the process of the session's next
// queued message starts. ZIMMER_BENCH_QUEUE_HANDOVERS (200) hand-overs, in
// sessions of ZIMMER_BENCH_QUEUE_CHAIN (50): each session is created with a
// first turn that sleeps ZIMMER_BENCH_QUEUE_SLEEP (5 s), during which
// CHAIN follow-ups are queued (202); each is a short turn, and every one
// must become a turn the runner's turn-end drain handed over (the queue's
// handed_over_from), without a pause between them.
//
// After each chain, two baselines, alternating one by one: the same
// session asked for a turn (a follow-up to it at rest, delivered at once,
// 200), and a bare fork/exec of the same demo agent binary with the same
// prompt by this process, as the runner starts it.
//
// Timestamps (one host, one clock):
//   - agent's last line of turn k, first line of turn k+1: the runner's
//     transcript_lines.created_at, Postgres's now() in the transaction that
//     stored the line (the runner had read it from the agent's stdout);
//   - turn k ended: its transcript_turns.ended_at (the runner reaped the
//     process and recorded the end);
//   - claimed, sent: the queue's enqueued_messages.claimed_at and sent_at,
//     the queue's clock when its claim transaction claimed the message and
//     when lifecycle had answered DeliverTurn (the handed-over job);
//   - requested: the client's clock just before POST …/follow_up;
//   - bare: the moments this process started the agent and read its first
//     line from the pipe.
func TestQueueHandOverLatency(t *testing.T) {
	requireQueueBench(t)
	total := benchEnvInt(t, "ZIMMER_BENCH_QUEUE_HANDOVERS", 200)
	chain := benchEnvInt(t, "ZIMMER_BENCH_QUEUE_CHAIN", 50)
	sleep := benchEnvDuration(t, "ZIMMER_BENCH_QUEUE_SLEEP", 5*time.Second)
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	agentBin := filepath.Join(s.bin, "zimmer-demo-agent")
	runnerDB := connect(t, s.dbURL["runner"])
	queueDB := connect(t, s.dbURL["queue"])
	const prompt = "@demo say measuring the queue"
	promptFile := filepath.Join(t.TempDir(), "prompt.txt")
	require.NoError(t, os.WriteFile(promptFile, []byte(prompt), 0o644))

	// runChain creates a session whose first turn sleeps, queues n
	// follow-ups while it does, and waits until all n+1 turns have run.
	runChain := func(n int) (id int64, created time.Time) {
		created = time.Now()
		id = api.createRunning(t, repo, fmt.Sprintf("@demo sleep %s", sleep))
		api.waitStatus(t, id, "running")
		for i := 1; i <= n; i++ {
			code, got := api.followUp(t, id, fmt.Sprintf(`{"prompt":%q}`, prompt))
			require.Equal(t, http.StatusAccepted, code, "follow-up %d of session %d was not queued: %+v", i, id, got)
		}
		var turns int
		var ended bool
		require.NoError(t, runnerDB.QueryRow(t.Context(),
			`SELECT count(*), coalesce(bool_or(ended_at IS NOT NULL), false) FROM transcript_turns WHERE session_id = $1`, id).Scan(&turns, &ended))
		require.False(t, turns > 1 || ended,
			"session %d's first turn ended before its %d follow-ups were queued: raise ZIMMER_BENCH_QUEUE_SLEEP (%s)", id, n, sleep)
		require.Eventually(t, func() bool {
			var ended int
			err := runnerDB.QueryRow(t.Context(),
				`SELECT count(*) FROM transcript_turns WHERE session_id = $1 AND ended_at IS NOT NULL`, id).Scan(&ended)
			return err == nil && ended == n+1 && api.session(t, id).Status == "needs_input"
		}, sleep+time.Duration(n)*time.Second+time.Minute, 100*time.Millisecond, "session %d never ran its %d queued follow-ups", id, n)
		require.Equal(t, []string{"start", "pause"}, api.transitions(t, id),
			"session %d: every queued follow-up was handed over at a turn end, with no pause between", id)
		return id, created
	}
	type request struct {
		at    time.Time
		jobID string
	}
	// requestTurn asks the session at rest for a turn and waits for its end.
	requestTurn := func(id int64) request {
		at := time.Now()
		code, got := api.followUp(t, id, fmt.Sprintf(`{"prompt":%q}`, prompt))
		require.Equal(t, http.StatusOK, code, "session %d at rest: %+v", id, got)
		require.NotEmpty(t, got.JobID)
		require.Eventually(t, func() bool { return api.session(t, id).Status == "needs_input" },
			60*time.Second, 10*time.Millisecond, "session %d's requested turn never ended", id)
		return request{at: at, jobID: got.JobID}
	}

	// Warm-up, unmeasured: connections, caches, the workers' first polls.
	warm, _ := runChain(5)
	for range 5 {
		requestTurn(warm)
		runBare(t, agentBin, promptFile, repo)
	}

	load0 := loadAverage(t)
	start := time.Now()
	var (
		sessions []int64
		creates  []time.Duration
		requests []request
		bare     []bareRun
	)
	for left := total; left > 0; left -= chain {
		n := min(chain, left)
		id, created := runChain(n)
		sessions = append(sessions, id)
		var started time.Time
		require.NoError(t, runnerDB.QueryRow(t.Context(),
			`SELECT started_at FROM transcript_turns WHERE session_id = $1 ORDER BY position LIMIT 1`, id).Scan(&started))
		creates = append(creates, started.Sub(created))
		// Alternate which side goes first, so neither always follows the other.
		for i := range n {
			if i%2 == 0 {
				requests = append(requests, requestTurn(id))
				bare = append(bare, runBare(t, agentBin, promptFile, repo))
			} else {
				bare = append(bare, runBare(t, agentBin, promptFile, repo))
				requests = append(requests, requestTurn(id))
			}
		}
	}
	t.Logf("%d hand-overs in %d sessions, %d requested turns and %d bare runs in %s; load average %s before, %s after",
		total, len(sessions), len(requests), len(bare), time.Since(start).Round(time.Second), load0, loadAverage(t))

	// A turn as the runner's database recorded it.
	type turnTimes struct {
		index                      int // 1-based, in the order the session ran them
		firstLine, lastLine, ended time.Time
	}
	turns := map[string]turnTimes{}
	rows, err := runnerDB.Query(t.Context(), `
		SELECT t.turn_id, row_number() OVER (PARTITION BY t.session_id ORDER BY t.position), t.ended_at,
		       min(l.created_at), max(l.created_at)
		FROM transcript_turns t JOIN transcript_lines l ON l.turn_id = t.turn_id
		WHERE t.session_id = ANY($1)
		GROUP BY t.turn_id`, sessions)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		var tt turnTimes
		require.NoError(t, rows.Scan(&id, &tt.index, &tt.ended, &tt.firstLine, &tt.lastLine))
		turns[id] = tt
	}
	require.NoError(t, rows.Err())

	var (
		handOver, crossing, within, exitToEnded, endedToStarted []time.Duration
		endedToClaimed, claimedToSent, sentToStarted            []time.Duration
	)
	handed := 0
	rows, err = queueDB.Query(t.Context(), `
		SELECT status, coalesce(handed_over_from, ''), coalesce(delivered_job_id, ''), claimed_at, sent_at
		FROM enqueued_messages WHERE session_id = ANY($1)`, sessions)
	require.NoError(t, err)
	for rows.Next() {
		var status, from, to string
		var claimed, sent *time.Time
		require.NoError(t, rows.Scan(&status, &from, &to, &claimed, &sent))
		require.Equal(t, "sent", status, "every queued message became a turn")
		require.NotEmpty(t, from, "every queued message was handed over at a turn's end (the requested turns were never queued)")
		prev, ok := turns[from]
		require.True(t, ok, "turn %s", from)
		next, ok := turns[to]
		require.True(t, ok, "turn %s", to)
		require.Equal(t, prev.index+1, next.index, "handed over from %s, the turn before", from)
		handed++
		d := next.firstLine.Sub(prev.lastLine)
		handOver = append(handOver, d)
		if prev.index%turnsPerRun == 0 {
			crossing = append(crossing, d)
		} else {
			within = append(within, d)
		}
		exitToEnded = append(exitToEnded, prev.ended.Sub(prev.lastLine))
		endedToStarted = append(endedToStarted, next.firstLine.Sub(prev.ended))
		endedToClaimed = append(endedToClaimed, claimed.Sub(prev.ended))
		claimedToSent = append(claimedToSent, sent.Sub(*claimed))
		sentToStarted = append(sentToStarted, next.firstLine.Sub(*sent))
	}
	require.NoError(t, rows.Err())
	require.Equal(t, total, handed, "one hand-over per queued follow-up")

	var requested, bareStarted []time.Duration
	for _, r := range requests {
		tt, ok := turns[r.jobID]
		require.True(t, ok, "requested turn %s", r.jobID)
		requested = append(requested, tt.firstLine.Sub(r.at))
	}
	for _, b := range bare {
		bareStarted = append(bareStarted, b.firstLine.Sub(b.start))
	}

	h, q, b := dist(handOver), dist(requested), dist(bareStarted)
	row := func(name string, d []time.Duration) {
		x := dist(d)
		t.Logf("| %s | %d | %s | %s | %s |", name, len(d), x.p(10), x.p(50), x.p(99))
	}
	t.Logf("| interval | n | p10 | p50 | p99 |")
	t.Logf("|---|---|---|---|---|")
	row("agent's last line (turn k) → first line of the handed-over turn k+1", handOver)
	row("  of which: last line → turn k ended (runner reaped, recorded)", exitToEnded)
	row("  of which: turn k ended → turn k+1's first line", endedToStarted)
	row("    ended → queue claimed the message (workflow task, drain, gRPC)", endedToClaimed)
	row("    claimed → sent (lifecycle DeliverTurn, the claim's commit)", claimedToSent)
	row("    sent → first line (answer, RunTurn dispatch, fork/exec)", sentToStarted)
	row("  hand-overs within a workflow run", within)
	row(fmt.Sprintf("  hand-overs across a continue-as-new (every %d turns)", turnsPerRun), crossing)
	row("requested turn: follow-up to the session at rest (200) → first line", requested)
	row("bare fork/exec → first line read", bareStarted)
	row("create → first turn's first line (one per session)", creates)
	t.Logf("| **hand-over ÷ bare** | | %.1f× | **%.1f×** | **%.1f×** |", ratio(h, b, 10), ratio(h, b, 50), ratio(h, b, 99))
	t.Logf("| **hand-over − bare** | | %s | **%s** | **%s** |", h.p(10)-b.p(10), h.p(50)-b.p(50), h.p(99)-b.p(99))
	t.Logf("| **hand-over − requested turn** | | %s | **%s** | **%s** |", h.p(10)-q.p(10), h.p(50)-q.p(50), h.p(99)-q.p(99))
}

// loadAverage is the machine's 1-, 5- and 15-minute load averages.
func loadAverage(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	require.NoError(t, err)
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
