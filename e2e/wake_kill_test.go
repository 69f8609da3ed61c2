package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Lifecycle's status integers (sessions.status; needs_input is
// runner_bench_test's statusNeedsInput).
const (
	statusRunning  = 0
	statusWaiting  = 1
	statusArchived = 3
	statusFailed   = 4
)

// wakeRow is a one-time trigger as lifecycle's wake_triggers keeps it.
type wakeRow struct {
	ID, SessionID int64
	Status        string
	FireAt        time.Time
	FiredAt       *time.Time
}

// wakeRows reads every one-time trigger of the stack.
func wakeRows(t *testing.T, s *stack) []wakeRow {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.dbURL["lifecycle"])
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id, session_id, status, fire_at, fired_at FROM wake_triggers WHERE kind = 'one_time' ORDER BY id`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (wakeRow, error) {
		var w wakeRow
		return w, r.Scan(&w.ID, &w.SessionID, &w.Status, &w.FireAt, &w.FiredAt)
	})
	require.NoError(t, err)
	return out
}

// noTurnOrWake says the stack is at rest but for its queues: no session
// running, no wake armed or firing.
func noTurnOrWake(t *testing.T, s *stack) bool {
	t.Helper()
	if countSessions(t, s, statusRunning) > 0 {
		return false
	}
	for _, w := range wakeRows(t, s) {
		if w.Status == "armed" || w.Status == "firing" {
			return false
		}
	}
	return true
}

// countSessions counts the stack's sessions in a status.
func countSessions(t *testing.T, s *stack, status int) int {
	t.Helper()
	return s.queryInt(t, "lifecycle", `SELECT count(*) FROM sessions WHERE status = $1`, status)
}

// inParallel runs fn for each of n items on a few workers (the machine has
// two cores; the stack, not the client, is what is measured).
func inParallel(n, workers int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// pauseUntil arms a session's Pause Until over REST.
func (c restClient) pauseUntil(t *testing.T, id int64, at time.Time, prompt string) armedTrigger {
	t.Helper()
	body, err := json.Marshal(map[string]string{"wake_at": at.Format(time.RFC3339Nano), "prompt": prompt})
	require.NoError(t, err)
	code, resp := c.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause_until", id), string(body))
	require.Equal(t, http.StatusOK, code, resp)
	var got struct{ Trigger armedTrigger }
	require.NoError(t, json.Unmarshal([]byte(resp), &got), resp)
	return got.Trigger
}

// percentile is the p-th percentile (0..100) of sorted durations, nearest
// rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted)+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// TestWakeKill is issue 13's crash test: 100 wakes armed (Pause Until on
// 100 sessions at rest), then the service that owns the triggers
// (lifecycle) and the Temporal dev server are killed with SIGKILL, and
// both are started again, Temporal on the same database file. Every wake
// fires once — one trigger row fired, one turn with its prompt, one
// resume — and none early: neither the trigger's firing nor its turn
// before its fire_at.
func TestWakeKill(t *testing.T) {
	skipWithoutChaos(t)
	t.Parallel()
	n := 100
	if testing.Short() {
		n = 30
	}
	temporal := startDevTemporal(t)
	s := newStackWith(t, stackOptions{turns: true, temporal: temporal.addr})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	// n sessions at rest in needs_input, each after one turn.
	ids := make([]int64, n)
	inParallel(n, 4, func(i int) { ids[i] = api.createRunning(t, repo, fmt.Sprintf("@demo say session %d is ready", i)) })
	require.Eventually(t, func() bool { return countSessions(t, s, statusNeedsInput) == n }, 120*time.Second, 500*time.Millisecond,
		"not every session came to rest in needs_input (%d of %d)", countSessions(t, s, statusNeedsInput), n)

	// The wakes, spread over 10 s from 45 s ahead: far enough that the
	// arming and the kills fit before them (the grace window is 30 s).
	armedAt := time.Now()
	first := armedAt.Add(45 * time.Second)
	wakes := make(map[int64]armedTrigger, n) // by session
	var mu sync.Mutex
	inParallel(n, 4, func(i int) {
		at := first.Add(time.Duration(i) * 10 * time.Second / time.Duration(n)).Truncate(time.Millisecond)
		w := api.pauseUntil(t, ids[i], at, fmt.Sprintf("@demo say wake of session %d ran", ids[i]))
		mu.Lock()
		wakes[ids[i]] = w
		mu.Unlock()
	})
	require.Len(t, wakes, n)
	t.Logf("%d wakes armed in %s, due from %s", n, time.Since(armedAt).Round(time.Millisecond), time.Until(first).Round(time.Second))
	require.Equal(t, n, countSessions(t, s, statusWaiting), "every session sleeps on its wake")

	// The crash: the triggers' owner and Temporal, both at once.
	s.kill("lifecycle")
	temporal.kill()
	time.Sleep(3 * time.Second)
	temporal.start()
	s.start("lifecycle")
	s.waitHealthy("lifecycle")
	t.Logf("lifecycle and temporal back %s before the first wake", time.Until(first).Round(time.Millisecond))
	require.True(t, time.Now().Before(first), "the restart took past the first wake: the test proves less than it says")

	// Nothing fires early: while the wakes are ahead, every session sleeps.
	for time.Now().Before(first.Add(-500 * time.Millisecond)) {
		require.Equal(t, n, countSessions(t, s, statusWaiting), "a session woke before the first wake was due")
		time.Sleep(time.Second)
	}

	// Every wake fires, and its turn ends: bounded by the last wake plus
	// a minute.
	last := first.Add(10 * time.Second)
	require.Eventually(t, func() bool {
		fired := 0
		for _, w := range wakeRows(t, s) {
			if w.Status == "fired" {
				fired++
			}
		}
		return fired == n && countSessions(t, s, statusNeedsInput) == n
	}, time.Until(last)+60*time.Second, time.Second, "not every wake fired and ran (%d needs_input of %d)",
		countSessions(t, s, statusNeedsInput), n)

	rows := wakeRows(t, s)
	require.Len(t, rows, n, "one trigger per session, none added")
	var firedLate, turnLate []time.Duration
	for _, w := range rows {
		armed, ok := wakes[w.SessionID]
		require.True(t, ok, "trigger %d of an unknown session %d", w.ID, w.SessionID)
		require.Equal(t, armed.ID, w.ID)
		require.True(t, w.FireAt.Equal(armed.FireAt), "trigger %d: fire_at %s, armed %s", w.ID, w.FireAt, armed.FireAt)
		require.Equal(t, "fired", w.Status, "trigger %d", w.ID)
		require.NotNil(t, w.FiredAt)
		require.False(t, w.FiredAt.Before(w.FireAt), "trigger %d fired at %s, before its fire_at %s", w.ID, w.FiredAt, w.FireAt)
		firedLate = append(firedLate, w.FiredAt.Sub(w.FireAt))

		// Once: one resume, and one turn with the wake's prompt.
		require.Equal(t, []string{"start", "pause", "sleep", "resume", "pause"}, api.transitions(t, w.SessionID),
			"session %d woke once", w.SessionID)
		turns := api.timedTurns(t, w.SessionID)
		require.Len(t, turns, 2, "session %d: its first turn and its wake's", w.SessionID)
		want := fmt.Sprintf("wake of session %d ran", w.SessionID)
		require.Contains(t, turns[1].Text, want)
		require.NotContains(t, turns[0].Text, want)
		require.False(t, turns[1].StartedAt.Before(w.FireAt), "session %d: the wake's turn started at %s, before %s",
			w.SessionID, turns[1].StartedAt, w.FireAt)
		turnLate = append(turnLate, turns[1].StartedAt.Sub(w.FireAt))
	}
	slices.Sort(firedLate)
	slices.Sort(turnLate)
	t.Logf("%d wakes through a kill -9 of lifecycle and temporal: all fired once, none early; "+
		"lateness fire_at → fired p50 %s p99 %s max %s; fire_at → turn started p50 %s p99 %s max %s",
		n, percentile(firedLate, 50), percentile(firedLate, 99), firedLate[len(firedLate)-1],
		percentile(turnLate, 50), percentile(turnLate, 99), turnLate[len(turnLate)-1])
	if errs := logErrors(s, "lifecycle"); errs != "" {
		t.Logf("lifecycle's errors:\n%s", errs)
	}
}

// logErrors are the error lines of a process's log, for the report.
func logErrors(s *stack, name string) string {
	b, _ := os.ReadFile(filepath.Join(s.logs, name+".log"))
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			out = append(out, line)
		}
	}
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("… %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}
