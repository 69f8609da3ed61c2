package e2e_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// slotWait is a session's slot_wait on the wire.
type slotWait struct {
	Reason   string    `json:"reason"`
	Position int       `json:"position"`
	Since    time.Time `json:"since"`
}

type rankedSession struct {
	ID              int64     `json:"id"`
	Status          string    `json:"status"`
	SchedulingClass string    `json:"scheduling_class"`
	Precedence      int       `json:"precedence"`
	SlotWait        *slotWait `json:"slot_wait"`
}

// ranked is GET /api/v1/sessions?view=ranked: the line in run order.
func (c restClient) ranked(t *testing.T) []rankedSession {
	t.Helper()
	code, body := c.do(t, http.MethodGet, "/api/v1/sessions?view=ranked&per_page=100", "")
	require.Equal(t, http.StatusOK, code, body)
	var got struct{ Sessions []rankedSession }
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	return got.Sessions
}

func (c restClient) slotSession(t *testing.T, id int64) rankedSession {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var got struct{ Session rankedSession }
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	return got.Session
}

// setSlots is PATCH /api/v1/admin/turn_slots.
func (c restClient) setSlots(t *testing.T, limit int) {
	t.Helper()
	code, body := c.do(t, http.MethodPatch, "/api/v1/admin/turn_slots", fmt.Sprintf(`{"limit":%d}`, limit))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, fmt.Sprintf(`"limit":%d`, limit), body)
}

func (c restClient) createClassed(t *testing.T, repo, prompt, class string, precedence int) int64 {
	t.Helper()
	body, err := json.Marshal(map[string]any{"prompt": prompt, "git_root": repo, "branch": "main",
		"scheduling_class": class, "precedence": precedence})
	require.NoError(t, err)
	code, resp := c.do(t, http.MethodPost, "/api/v1/sessions", string(body))
	require.Equal(t, http.StatusCreated, code, resp)
	var got struct{ Session runnerSession }
	require.NoError(t, json.Unmarshal([]byte(resp), &got), resp)
	return got.Session.ID
}

// grantedAt is when the session's waiting turn was given a slot (its
// timeline's "[Slots] … got a turn slot" line); false when it never
// waited a second.
func (c restClient) grantedAt(t *testing.T, id int64) (time.Time, bool) {
	t.Helper()
	return c.timelineAt(t, id, "got a turn slot")
}

// timelineAt is when the session's timeline first says what.
func (c restClient) timelineAt(t *testing.T, id int64, what string) (time.Time, bool) {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/timeline", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var got struct {
		Timeline []struct {
			Message   string    `json:"message"`
			CreatedAt time.Time `json:"created_at"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	for _, l := range got.Timeline {
		if strings.Contains(l.Message, what) {
			return l.CreatedAt, true
		}
	}
	return time.Time{}, false
}

func (c restClient) timelineText(t *testing.T, id int64) string {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/timeline", id), "")
	require.Equal(t, http.StatusOK, code, body)
	return body
}

// TestTurnSlots (LC-36, RN-35): with 3 turn slots, 10 spot sessions run 3
// at a time in precedence order, each waiting visibly (REST, the timeline,
// the ranked view), and a priority session created meanwhile takes the
// next free slot ahead of every spot session still waiting; the limit is
// changed at run time by an admin key only.
func TestTurnSlots(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{"lifecycle": {"LIFECYCLE_TURN_SLOTS=0"}}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	operator := restClient{base: "http://" + s.addr["gateway"], key: s.operatorKey}
	repo := gitRepo(t)

	// Nothing runs with 0 slots: 10 spot sessions, created in a random
	// order of precedence, wait in waiting, in line by precedence.
	precedences := rand.Perm(10)
	byID := map[int64]int{}
	var ids []int64
	for _, p := range precedences {
		id := api.createClassed(t, repo, "@demo sleep 3s", "spot", p)
		byID[id] = p
		ids = append(ids, id)
	}
	var line []rankedSession
	require.Eventually(t, func() bool {
		line = api.ranked(t)
		return len(line) == 10
	}, 60*time.Second, 200*time.Millisecond, "the 10 turns never all waited in line: %+v", line)
	for i, r := range line {
		require.Equal(t, 9-i, byID[r.ID], "the line runs highest precedence first: %+v", line)
		require.Equal(t, "waiting", r.Status)
		require.NotNil(t, r.SlotWait)
		require.Equal(t, "no_slot", r.SlotWait.Reason)
		require.Equal(t, i+1, r.SlotWait.Position)
	}
	one := api.slotSession(t, ids[0])
	require.NotNil(t, one.SlotWait, "GET says why it waits")
	require.Equal(t, "no_slot", one.SlotWait.Reason)
	require.Contains(t, api.timelineText(t, ids[0]), "waits for a turn slot", "the timeline says it waits")

	// Only an admin key changes the limit.
	code, body := operator.do(t, http.MethodPatch, "/api/v1/admin/turn_slots", `{"limit":3}`)
	require.Equal(t, http.StatusForbidden, code, body)

	// Watch how many run at once while they go.
	var mu sync.Mutex
	most := 0
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			running := 0
			for _, id := range ids {
				if len(turnProcesses(t, s, id)) > 0 {
					running++
				}
			}
			mu.Lock()
			most = max(most, running)
			mu.Unlock()
		}
	}()
	api.setSlots(t, 3)

	// Once the first three run, a priority session arrives.
	require.Eventually(t, func() bool {
		n := 0
		for _, id := range ids {
			if api.session(t, id).Status != "waiting" {
				n++
			}
		}
		return n >= 3
	}, 90*time.Second, 100*time.Millisecond, "three slots, and not three turns started")
	priorityAt := time.Now()
	priority := api.createClassed(t, repo, "@demo say priority work", "priority", 0)

	for _, id := range append(slices.Clone(ids), priority) {
		api.waitStatus(t, id, "needs_input")
	}
	close(stop)
	<-watched
	require.LessOrEqual(t, most, 3, "never more than 3 turns at once")

	// Each ran once; the slots went out highest precedence first (the
	// first three in the one pass the limit's change ran).
	grants := map[int64]time.Time{}
	for _, id := range ids {
		// The transcript's turn is the runner's to record, a moment apart
		// from the status the loop above waited for.
		require.Eventually(t, func() bool { return len(api.timedTurns(t, id)) == 1 }, 10*time.Second, 100*time.Millisecond,
			"session %d ran once: %s", id, api.timelineText(t, id))
		at, ok := api.grantedAt(t, id)
		require.True(t, ok, "session %d waited for its slot, and its timeline says when it got it: %s", id, api.timelineText(t, id))
		grants[id] = at
	}
	byPrecedence := slices.Clone(ids)
	slices.SortFunc(byPrecedence, func(a, b int64) int { return byID[b] - byID[a] })
	for i := 1; i < len(byPrecedence); i++ {
		hi, lo := byPrecedence[i-1], byPrecedence[i]
		require.False(t, grants[lo].Before(grants[hi]), "precedence %d got its slot (%s) before precedence %d (%s)",
			byID[lo], grants[lo], byID[hi], grants[hi])
	}
	require.True(t, grants[byPrecedence[0]].Equal(grants[byPrecedence[2]]), "the raised limit gave three slots in one pass")

	// The priority session went ahead of every spot session still waiting
	// when its turn joined the line (its clone takes a moment after the
	// create, and a slot freed meanwhile rightly goes to the line's head).
	require.Len(t, api.timedTurns(t, priority), 1)
	prioGrant, waited := api.grantedAt(t, priority)
	joined := priorityAt
	if !waited {
		prioGrant = priorityAt // a slot was free at once
	} else {
		joined, _ = api.timelineAt(t, priority, "waits for a turn slot")
	}
	for _, id := range ids {
		if grants[id].After(joined) {
			require.True(t, prioGrant.Before(grants[id]),
				"the priority session (slot at %s) went before spot session %d (slot at %s)", prioGrant, id, grants[id])
		}
	}
	require.Less(t, prioGrant.Sub(priorityAt), 15*time.Second, "the priority session took the next free slot")
	require.Empty(t, api.ranked(t), "the line is empty once all ran")
}

// TestSpotQueue (LC-36): pause_into_spot_queue on a needs_input session
// sleeps it with no wake and resumes it only when a slot frees; a spot
// sleeper asleep on a wall-clock wake is never started by the scheduler.
func TestSpotQueue(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{"lifecycle": {"LIFECYCLE_TURN_SLOTS=1"}}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	idle := api.createRunning(t, repo, "@demo say first turn")
	api.waitStatus(t, idle, "needs_input")
	waker := api.createClassed(t, repo, "@demo say first turn", "spot", 100)
	api.waitStatus(t, waker, "needs_input")

	// A long turn holds the one slot.
	busy := api.createRunning(t, repo, "@demo sleep 8s")
	require.Eventually(t, func() bool { return len(turnProcesses(t, s, busy)) > 0 }, 30*time.Second, 50*time.Millisecond,
		"the long turn never started")

	// The waker sleeps in the spot queue, then on a wall-clock wake as
	// well: that outranks the queue, so nothing may start it early.
	code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause_into_spot_queue", waker), `{}`)
	require.Equal(t, http.StatusOK, code, body)
	wakeAt := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
	code, body = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause_until", waker),
		fmt.Sprintf(`{"wake_at":%q}`, wakeAt.Format(time.RFC3339)))
	require.Equal(t, http.StatusOK, code, body)

	// The idle session goes to the spot queue: asleep, spot, in line.
	code, body = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause_into_spot_queue", idle), `{}`)
	require.Equal(t, http.StatusOK, code, body)
	var paused struct {
		Session rankedSession
		Message string
	}
	require.NoError(t, json.Unmarshal([]byte(body), &paused), body)
	require.Equal(t, "waiting", paused.Session.Status, body)
	require.Equal(t, "spot", paused.Session.SchedulingClass, "it is spot now")
	require.NotNil(t, paused.Session.SlotWait, body)
	require.Equal(t, "spot_queue", paused.Session.SlotWait.Reason)
	require.Contains(t, paused.Message, "spot queue")
	line := api.ranked(t)
	require.Len(t, line, 1, "the waker, asleep on a wake, is not in line: %+v", line)
	require.Equal(t, idle, line[0].ID)

	// Not while the slot is held.
	for len(turnProcesses(t, s, busy)) > 0 {
		require.Equal(t, "waiting", api.session(t, idle).Status, "resumed while no slot was free")
		time.Sleep(200 * time.Millisecond)
	}
	// The slot frees: the spot scheduler resumes it, and its turn runs.
	require.Eventually(t, func() bool {
		return slices.Contains(api.transitions(t, idle), "resume")
	}, 30*time.Second, 100*time.Millisecond, "the spot sleeper never resumed once the slot freed")
	api.waitStatus(t, idle, "needs_input")
	require.Contains(t, api.timelineText(t, idle), "the spot scheduler resumes the session")
	require.Len(t, api.timedTurns(t, idle), 2, "one more turn")

	// The waker never ran again: its wake is still ahead.
	require.Equal(t, "waiting", api.session(t, waker).Status)
	require.Len(t, api.timedTurns(t, waker), 1)
	armed := api.triggers(t, waker)
	require.Len(t, armed, 1, "its wake is still armed")
	require.True(t, strings.Contains(api.timelineText(t, waker), "paused into the spot queue"))
}

// TestSpotQueueKill (LC-36, a crash test): the spot scheduler's owner,
// lifecycle, is killed -9 while a raised limit's pass grants slots to six
// spot sleepers and resumes them. Whatever the kill cut short — the grant,
// or the resumes after it — the restarted lifecycle's passes finish it:
// every sleeper resumes exactly once and runs exactly one more turn.
func TestSpotQueueKill(t *testing.T) {
	t.Parallel()
	skipWithoutChaos(t)
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{"lifecycle": {"LIFECYCLE_SPOT_SWEEP_INTERVAL=5s"}}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	var ids []int64
	for i := range 6 {
		ids = append(ids, api.createClassed(t, repo, "@demo say first turn", "spot", i))
	}
	for _, id := range ids {
		api.waitStatus(t, id, "needs_input")
	}
	api.setSlots(t, 0)
	for _, id := range ids {
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause_into_spot_queue", id), `{}`)
		require.Equal(t, http.StatusOK, code, body)
	}
	require.Len(t, api.ranked(t), 6)

	// The raised limit's pass, and the kill in the middle of it.
	raised := make(chan struct{})
	go func() {
		defer close(raised)
		body := `{"limit":6}`
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPatch, api.base+"/api/v1/admin/turn_slots", strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("X-API-Key", api.key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	time.Sleep(20 * time.Millisecond)
	s.kill("lifecycle")
	<-raised
	s.start("lifecycle")
	s.waitHealthy("lifecycle")
	api.setSlots(t, 6) // the limit may not have committed before the kill

	for _, id := range ids {
		require.Eventually(t, func() bool {
			return len(api.timedTurns(t, id)) == 2 && api.session(t, id).Status == "needs_input"
		}, 120*time.Second, 250*time.Millisecond, "session %d never ran its turn out of the spot queue", id)
	}
	time.Sleep(6 * time.Second) // a further pass of the backstop schedule starts nothing more
	for _, id := range ids {
		require.Equal(t, []string{"start", "pause", "sleep", "resume", "pause"}, api.transitions(t, id),
			"session %d resumed exactly once", id)
		require.Len(t, api.timedTurns(t, id), 2, "session %d ran exactly one more turn", id)
	}
	require.Empty(t, api.ranked(t))
}

// TestNodeTurnSlots (LC-38): a runner node started with RUNNER_TURN_SLOTS=1
// runs one turn at a time though the fleet has no limit; the second turn
// waits visibly — no_node_slot on REST, the ranked view and its timeline
// — and runs when the first gives its slot back.
func TestNodeTurnSlots(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{"runner": {"RUNNER_TURN_SLOTS=1"}}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	// Long enough for the second session's clone to be made meanwhile.
	first := api.createRunning(t, repo, "@demo sleep 25s")
	require.Eventually(t, func() bool { return len(turnProcesses(t, s, first)) > 0 }, 60*time.Second, 50*time.Millisecond,
		"the first turn never started")
	second := api.createRunning(t, repo, "@demo say after the first")
	var got rankedSession
	require.Eventually(t, func() bool {
		got = api.slotSession(t, second)
		return got.SlotWait != nil
	}, 30*time.Second, 100*time.Millisecond, "the second turn never waited")
	require.Equal(t, "no_node_slot", got.SlotWait.Reason, "it waits for its node, not the fleet")
	require.Equal(t, 1, got.SlotWait.Position)
	line := api.ranked(t)
	require.Len(t, line, 1)
	require.Equal(t, "no_node_slot", line[0].SlotWait.Reason)
	require.Contains(t, api.timelineText(t, second), "waits for a turn slot on runner node")
	require.Contains(t, api.timelineText(t, second), "1 of its 1 in use (RUNNER_TURN_SLOTS)")
	require.Empty(t, turnProcesses(t, s, second), "no process while it waits")
	require.NotEmpty(t, turnProcesses(t, s, first), "the first still runs")

	api.waitStatus(t, first, "needs_input")
	api.waitStatus(t, second, "needs_input")
	require.Len(t, api.timedTurns(t, first), 1)
	secondTurns := api.timedTurns(t, second)
	require.Len(t, secondTurns, 1)
	granted, waited := api.grantedAt(t, second)
	require.True(t, waited, "the second turn got its slot when the first gave it back")
	require.False(t, secondTurns[0].StartedAt.Before(granted), "its process started only with the slot")
	require.GreaterOrEqual(t, granted.Sub(api.timedTurns(t, first)[0].StartedAt), 24*time.Second,
		"the slot came when the first's 25-second turn gave it back")
	require.Empty(t, api.ranked(t))
}
