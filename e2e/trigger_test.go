package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// armedTrigger is a trigger as GET /api/v1/sessions/{id}/triggers lists it.
type armedTrigger struct {
	ID               int64     `json:"id"`
	SessionID        int64     `json:"session_id"`
	Kind             string    `json:"kind"`
	FireAt           time.Time `json:"fire_at"`
	WatchedSessionID int64     `json:"watched_session_id"`
	States           []string  `json:"states"`
	Prompt           string    `json:"prompt"`
	Source           string    `json:"source"`
	WorkflowID       string    `json:"workflow_id"`
}

// triggers lists the session's armed triggers.
func (c restClient) triggers(t *testing.T, id int64) []armedTrigger {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/triggers", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var got struct{ Triggers []armedTrigger }
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	return got.Triggers
}

// timedTurn is one turn of a session's transcript with when it started and
// what its agent printed.
type timedTurn struct {
	StartedAt time.Time
	Ended     bool
	Text      string
}

// timedTurns are the session's turns, oldest first.
func (c restClient) timedTurns(t *testing.T, id int64) []timedTurn {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/transcript?page_size=1000", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var page struct {
		Turns []struct {
			TurnID    string    `json:"turn_id"`
			StartedAt time.Time `json:"started_at"`
			EndedAt   string    `json:"ended_at"`
		}
		Lines []struct {
			TurnID string `json:"turn_id"`
			Text   string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &page), body)
	var out []timedTurn
	for _, tr := range slices.Backward(page.Turns) { // newest first on the wire
		var text []string
		for _, l := range page.Lines {
			if l.TurnID == tr.TurnID {
				text = append(text, l.Text)
			}
		}
		out = append(out, timedTurn{StartedAt: tr.StartedAt, Ended: tr.EndedAt != "", Text: strings.Join(text, "\n")})
	}
	return out
}

// refresh is POST /refresh's answer.
type refreshed struct {
	Session   runnerSession `json:"session"`
	Refreshed bool          `json:"refreshed"`
	Message   string        `json:"message"`
}

func (c restClient) refresh(t *testing.T, id int64) refreshed {
	t.Helper()
	code, body := c.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/refresh", id), "{}")
	require.Equal(t, http.StatusOK, code, body)
	var got refreshed
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	return got
}

// TestTriggers drives issue 13's wake-ups on the real binaries with the
// demo agent and Temporal: an agent's wake_me_up_later sleeps its session
// at the end of its turn and runs it again when the wake fires, never
// before; the operator's Pause Until halts a running turn and answers with
// the session asleep, a second one replaces the first, and a cancelled one
// never fires; a watcher wakes its session with its prompt when the
// watched one needs input; refresh gives a stuck session a turn and leaves
// a sleeper asleep, saying why.
func TestTriggers(t *testing.T) {
	t.Parallel()
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	t.Run("wake_me_up_later from the agent", func(t *testing.T) {
		t.Parallel()
		// 5 s is inside the 30 s grace window: refused, and the agent reads
		// why; 30 s is the soonest wake there is.
		id := api.createRunning(t, repo, `@demo mcp wake_me_up_later {"delay":"5s"}`+"\n"+
			`@demo mcp wake_me_up_later {"delay":"30s","prompt":"@demo say woke up on time"}`)
		var armed []armedTrigger
		require.Eventually(t, func() bool {
			armed = api.triggers(t, id)
			return len(armed) == 1
		}, 60*time.Second, 100*time.Millisecond, "the agent never armed its wake")
		wake := armed[0]
		require.Equal(t, "one_time", wake.Kind)
		require.Equal(t, "wake_me_up_later", wake.Source)
		require.Equal(t, fmt.Sprintf("session/%d/wake/%d", id, wake.ID), wake.WorkflowID)
		require.Equal(t, "@demo say woke up on time", wake.Prompt)

		// The turn ends, and the session sleeps on its wake.
		api.waitStatus(t, id, "waiting")
		first := api.timedTurns(t, id)
		require.Len(t, first, 1)
		require.Contains(t, first[0].Text, "grace window", "the refused 5 s wake says why: %s", first[0].Text)
		require.Equal(t, []string{"start", "pause", "sleep"}, api.transitions(t, id))

		// Not before fire_at: asleep, one turn, until then.
		for time.Now().Before(wake.FireAt.Add(-200 * time.Millisecond)) {
			require.Equal(t, "waiting", api.session(t, id).Status, "woke before %s", wake.FireAt)
			require.Len(t, api.timedTurns(t, id), 1, "a turn started before %s", wake.FireAt)
			time.Sleep(250 * time.Millisecond)
		}

		// Then it runs again, with the wake's prompt, soon after.
		var turns []timedTurn
		require.Eventually(t, func() bool {
			turns = api.timedTurns(t, id)
			return len(turns) == 2 && turns[1].Ended
		}, 30*time.Second, 100*time.Millisecond, "the wake's turn never ran")
		require.False(t, turns[1].StartedAt.Before(wake.FireAt), "the wake's turn started at %s, before its fire_at %s", turns[1].StartedAt, wake.FireAt)
		require.Less(t, turns[1].StartedAt.Sub(wake.FireAt), 10*time.Second, "the wake's turn started %s late", turns[1].StartedAt.Sub(wake.FireAt))
		require.Contains(t, turns[1].Text, "woke up on time")
		api.waitStatus(t, id, "needs_input")
		require.Equal(t, []string{"start", "pause", "sleep", "resume", "pause"}, api.transitions(t, id))
		require.Empty(t, api.triggers(t, id), "a fired wake is no longer armed")
	})

	t.Run("Pause Until over REST, replaced, cancelled, never fires", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo sleep 60s")
		api.waitStatus(t, id, "running")
		require.Eventually(t, func() bool { return len(turnProcesses(t, s, id)) > 0 }, 20*time.Second, 50*time.Millisecond,
			"the agent never started")

		pauseUntil := func(at time.Time) runnerSession {
			t.Helper()
			code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause_until", id),
				fmt.Sprintf(`{"wake_at":%q,"prompt":"@demo say this wake was cancelled and must never run"}`, at.Format(time.RFC3339)))
			require.Equal(t, http.StatusOK, code, body)
			var got struct {
				Session runnerSession
				Trigger armedTrigger
			}
			require.NoError(t, json.Unmarshal([]byte(body), &got), body)
			require.True(t, got.Trigger.FireAt.Equal(at), "armed at %s, asked %s", got.Trigger.FireAt, at)
			return got.Session
		}
		// Whole seconds: the wire's RFC 3339 round-trips them exactly.
		wakeAt := time.Now().Add(40 * time.Second).UTC().Truncate(time.Second)
		asleep := pauseUntil(wakeAt)
		require.Equal(t, "waiting", asleep.Status, "asleep before the call returned")
		require.Empty(t, turnProcesses(t, s, id), "the running turn was halted first")
		armed := api.triggers(t, id)
		require.Len(t, armed, 1)
		require.Equal(t, "pause_until", armed[0].Source)

		// A second Pause Until replaces the first: one armed, the later.
		later := wakeAt.Add(5 * time.Second)
		require.Equal(t, "waiting", pauseUntil(later).Status)
		armed = api.triggers(t, id)
		require.Len(t, armed, 1, "never two armed")
		require.True(t, armed[0].FireAt.Equal(later), "%s", armed[0].FireAt)

		// Refresh leaves a sleeper asleep, and says why.
		r := api.refresh(t, id)
		require.False(t, r.Refreshed)
		require.Equal(t, "waiting", r.Session.Status)
		require.Contains(t, r.Message, "asleep")

		// Too soon is refused in the grace window's words, from any state.
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause_until", id),
			fmt.Sprintf(`{"wake_at":%q}`, time.Now().Add(10*time.Second).UTC().Format(time.RFC3339)))
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		refusal := readError(t, body)
		require.Contains(t, refusal.Message+strings.Join(refusal.Messages, "; "), "grace window")
		require.Len(t, api.triggers(t, id), 1, "a refused Pause Until replaces nothing")

		code, body = api.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/sessions/%d/triggers/%d", id, armed[0].ID), "")
		require.Equal(t, http.StatusOK, code, body)
		require.Empty(t, api.triggers(t, id))
		code, body = api.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/sessions/%d/triggers/%d", id, armed[0].ID), "")
		require.Equal(t, http.StatusNotFound, code, "a cancelled trigger is not armed: %s", body)

		// Its timer fires into nothing: past the wake, still asleep.
		for time.Now().Before(later.Add(5 * time.Second)) {
			require.Equal(t, "waiting", api.session(t, id).Status)
			time.Sleep(500 * time.Millisecond)
		}
		require.Len(t, api.timedTurns(t, id), 1, "no turn ran for the cancelled wake")
		require.Equal(t, []string{"start", "pause", "sleep"}, api.transitions(t, id), "halted, put to sleep, and never resumed")
		for _, tr := range api.timedTurns(t, id) {
			require.NotContains(t, tr.Text, "must never run")
		}
	})

	// Issue 23 rule 4: Pause Until is not offered to a session that never
	// started (it was armed, and the wake started it, before).
	t.Run("Pause Until refuses a session that never started", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say the first prompt ran")
		wakeAt := time.Now().Add(31 * time.Second).UTC().Truncate(time.Second)
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause_until", id),
			fmt.Sprintf(`{"wake_at":%q,"prompt":"@demo say the wake's prompt ran"}`, wakeAt.Format(time.RFC3339)))
		if got := api.transitions(t, id); len(got) > 0 {
			// The runner's first start landed before the Pause Until: that
			// halted a running turn, the case above.
			t.Skipf("the session started before the Pause Until (%v): nothing here never started", got)
		}
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		refusal := readError(t, body)
		require.Equal(t, "not_wakeable", refusal.Code)
		require.Contains(t, refusal.Message, "cannot be paused from here")
		require.Empty(t, api.triggers(t, id), "nothing armed")
	})

	t.Run("a watcher wakes its session when the watched one needs input", func(t *testing.T) {
		t.Parallel()
		watched := api.createRunning(t, repo, "@demo sleep 12s")
		api.waitStatus(t, watched, "running")
		watcher := api.createRunning(t, repo, fmt.Sprintf(
			`@demo mcp wake_me_up_when_session_changes_state {"watched_session_id":%d,"states":["needs_input"],"prompt":"@demo say my child is done"}`,
			watched))
		var armed []armedTrigger
		require.Eventually(t, func() bool {
			armed = api.triggers(t, watcher)
			return len(armed) == 1
		}, 30*time.Second, 100*time.Millisecond, "the agent never armed its watcher")
		require.Equal(t, "running", api.session(t, watched).Status, "the watcher was armed before the watched session paused")
		require.Equal(t, "session_state", armed[0].Kind)
		require.Equal(t, watched, armed[0].WatchedSessionID)
		require.Equal(t, []string{"needs_input"}, armed[0].States)

		// The watcher's own turn ends; it sleeps on its watcher (issue 23
		// rule 5), one turn.
		api.waitStatus(t, watcher, "waiting")
		require.Len(t, api.timedTurns(t, watcher), 1, "nothing woke the watcher yet")

		// The watched session's turn ends: the watcher gets a turn with the
		// prompt, after that.
		api.waitStatus(t, watched, "needs_input")
		pausedAt := time.Now()
		var turns []timedTurn
		require.Eventually(t, func() bool {
			turns = api.timedTurns(t, watcher)
			return len(turns) == 2 && turns[1].Ended
		}, 30*time.Second, 100*time.Millisecond, "the watcher never got its turn")
		require.Contains(t, turns[1].Text, "my child is done")
		require.Less(t, turns[1].StartedAt.Sub(pausedAt), 10*time.Second)
		api.waitStatus(t, watcher, "needs_input")
		require.Empty(t, api.triggers(t, watcher), "a watcher fires once")
	})

	// Issue 20 item 6: a follow-up to a session whose own watcher was
	// armed cancelled its one-time wakes but left the watcher armed, so it
	// later woke the session while busy. A deliberate resume cancels every
	// wake the session armed for itself.
	t.Run("a follow-up cancels the session's own watcher", func(t *testing.T) {
		t.Parallel()
		watched := api.createRunning(t, repo, "@demo sleep 20s")
		api.waitStatus(t, watched, "running")
		watcher := api.createRunning(t, repo, fmt.Sprintf(
			`@demo mcp wake_me_up_when_session_changes_state {"watched_session_id":%d,"states":["needs_input"],"prompt":"@demo say the stale watcher fired"}`,
			watched))
		require.Eventually(t, func() bool { return len(api.triggers(t, watcher)) == 1 }, 30*time.Second, 100*time.Millisecond,
			"the agent never armed its watcher")
		api.waitStatus(t, watcher, "waiting") // asleep on its watcher (issue 23 rule 5)

		code, got := api.followUp(t, watcher, `{"prompt":"@demo say taken over by hand"}`)
		require.Less(t, code, 300, "%+v", got)
		require.Eventually(t, func() bool { return len(api.triggers(t, watcher)) == 0 }, 10*time.Second, 100*time.Millisecond,
			"the follow-up's resume never cancelled the watcher")
		var turns []timedTurn
		require.Eventually(t, func() bool {
			turns = api.timedTurns(t, watcher)
			return len(turns) == 2 && turns[1].Ended
		}, 30*time.Second, 100*time.Millisecond, "the follow-up's turn never ran")
		require.Contains(t, turns[1].Text, "taken over by hand")
		api.waitStatus(t, watcher, "needs_input")

		// The watched session's turn ends: nothing wakes the watcher now.
		api.waitStatus(t, watched, "needs_input")
		time.Sleep(5 * time.Second)
		turns = api.timedTurns(t, watcher)
		require.Len(t, turns, 2, "a cancelled watcher woke the session")
		require.NotContains(t, turns[1].Text, "the stale watcher fired")
		require.Equal(t, "needs_input", api.session(t, watcher).Status)
	})

	// Issue 23 rule 6: a needs_input session gets the plain re-read; a
	// waiting one with nothing ahead (slept by hand) is stalled: nudged.
	t.Run("refresh gives a stalled session a turn", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say first")
		api.waitStatus(t, id, "needs_input")
		r := api.refresh(t, id)
		require.False(t, r.Refreshed, r.Message)
		require.Equal(t, "needs_input", r.Session.Status, r.Message)
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/sleep", id), "{}")
		require.Less(t, code, 300, body)
		r = api.refresh(t, id)
		require.True(t, r.Refreshed, r.Message)
		require.Equal(t, "running", r.Session.Status, r.Message)
		require.Eventually(t, func() bool {
			turns := api.timedTurns(t, id)
			return len(turns) == 2 && turns[1].Ended
		}, 30*time.Second, 100*time.Millisecond, "the refresh's turn never ran")
		api.waitStatus(t, id, "needs_input")
		require.Equal(t, []string{"start", "pause", "sleep", "resume", "pause"}, api.transitions(t, id))

		// A running session is left alone, saying so.
		running := api.createRunning(t, repo, "@demo sleep 10s")
		api.waitStatus(t, running, "running")
		r = api.refresh(t, running)
		require.False(t, r.Refreshed)
		require.Contains(t, r.Message, "running")
	})
}
