package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestFollowUpDuringRecovery provokes the race the chaos test once hit: a
// follow-up sent to a session in the instant between its recovery's pause
// (paused_by recovery) and its system-recovery resume is delivered as the
// session's turn (200) — and must run. Sessions mid-turn lose their turns
// with the runner; the test watches lifecycle's rows and sends each
// session its follow-up the moment it stands paused by the recovery.
// The delivered message is then the session's recovery: no nudge runs
// beside it. About 45 s; a crash test (make test-chaos). Before a411d02 the recovery took its refused resume for its own
// and ran the nudge too (in the chaos test, whose lifecycle then died and
// delayed the pause's interrupt, that nudge's pause stopped the delivered
// turn: the follow-up was answered 200 and never ran).
func TestFollowUpDuringRecovery(t *testing.T) {
	skipWithoutChaos(t)
	t.Parallel()
	const n = 12
	const text = "recovery race: the follow-up ran"
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	watch := watchAgents(t, s)
	ids := make([]int64, n)
	inParallel(n, 4, func(i int) { ids[i] = api.createRunning(t, repo, "@demo sleep 90s") })
	require.Eventually(t, func() bool { return watch.live() == n }, 60*time.Second, 200*time.Millisecond)
	time.Sleep(3 * time.Second) // the conversation's heartbeat: the recovery resumes with a nudge
	s.kill("runner")
	s.start("runner")
	s.waitHealthy("runner")

	// Each session's follow-up, the moment lifecycle shows it paused by
	// the recovery (a poll of the rows every 10 ms).
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.dbURL["lifecycle"])
	require.NoError(t, err)
	defer conn.Close(ctx)
	codes := map[int64]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	allSent := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(codes) == n
	}
	deadline := time.Now().Add(90 * time.Second)
	for !allSent() && time.Now().Before(deadline) {
		rows, err := conn.Query(ctx, `SELECT id FROM sessions WHERE status = $1 AND markers->>'paused_by' = 'recovery'`, statusNeedsInput)
		require.NoError(t, err)
		paused, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		for _, id := range paused {
			mu.Lock()
			_, sent := codes[id]
			if !sent {
				codes[id] = 0
			}
			mu.Unlock()
			if sent {
				continue
			}
			wg.Go(func() {
				code, _ := api.followUp(t, id, fmt.Sprintf(`{"prompt":"@demo say %s"}`, text))
				mu.Lock()
				codes[id] = code
				mu.Unlock()
			})
		}
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("follow-ups sent in the window: %v (200: delivered as the session's turn; 202: queued)", codes)

	// Rest, then every follow-up sent has run, once.
	require.Eventually(t, func() bool { return countSessions(t, s, statusRunning) == 0 }, 90*time.Second, time.Second,
		"the sessions never came to rest")
	lost, nudged := 0, 0
	for id, code := range codes {
		turns := api.timedTurns(t, id)
		ran := countTurnsSaying(turns, text)
		if ran != 1 {
			lost++
			t.Errorf("session %d: the follow-up answered %d ran %d times; transitions %v; its deliveries %s",
				id, code, ran, api.transitions(t, id), describeDeliveries(t, s, id))
		}
		// The delivered message is the recovery: no nudge besides it.
		if code == http.StatusOK && countTurnsSaying(turns, "[Zimmer system recovery]") > 0 {
			nudged++
			t.Errorf("session %d: a recovery nudge ran beside the follow-up delivered while paused by the recovery; transitions %v, %d turns",
				id, api.transitions(t, id), len(turns))
		}
	}
	t.Logf("%d follow-ups sent while paused by the recovery: %d not run exactly once, %d with a nudge beside them",
		len(codes), lost, nudged)
	for id, seen := range watch.twoProcesses() {
		t.Errorf("session %d had two agent processes: %s", id, seen)
	}
}
