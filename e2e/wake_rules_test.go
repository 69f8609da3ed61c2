package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWakeRules drives issue 23's rules 1 and 3-6 on the real binaries,
// where users meet them: REST's Pause Until and refresh, and an agent's
// MCP wake_me_up_later and wake_me_up_when_session_changes_state.
func TestWakeRules(t *testing.T) {
	t.Parallel()
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	pauseUntil := func(t *testing.T, id int64, body string) (int, string) {
		t.Helper()
		return api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause_until", id), body)
	}
	refused := func(t *testing.T, code int, body, wantCode, wantText string) {
		t.Helper()
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		e := readError(t, body)
		require.Equal(t, wantCode, e.Code, body)
		require.Contains(t, e.Message, wantText, body)
	}
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	// asleepAfterTurn waits for the session's first turn to end and the
	// session to be waiting (a session not started yet is waiting too).
	asleepAfterTurn := func(t *testing.T, id int64) []timedTurn {
		t.Helper()
		var turns []timedTurn
		require.Eventually(t, func() bool {
			turns = api.timedTurns(t, id)
			return len(turns) == 1 && turns[0].Ended && api.session(t, id).Status == "waiting"
		}, 60*time.Second, 100*time.Millisecond, "session %d never slept after its turn", id)
		return turns
	}
	// ahead is a naive UTC wall-clock time d from now.
	ahead := func(d time.Duration) string { return time.Now().UTC().Add(d).Format("2006-01-02T15:04:05") }

	// Rule 1: wake_at is wall-clock time in an IANA timezone, echoed
	// back; each refusal has its code and says what to do.
	t.Run("Pause Until reads wall-clock time in a zone", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say ready")
		api.waitStatus(t, id, "needs_input")
		armedBefore := func() int { return len(api.triggers(t, id)) }

		wall := time.Now().In(ny).Add(2 * time.Hour).Truncate(time.Minute)
		code, body := pauseUntil(t, id, fmt.Sprintf(`{"wake_at":%q,"timezone":"America/New_York"}`, wall.Format("2006-01-02T15:04")))
		require.Equal(t, http.StatusOK, code, body)
		var got struct {
			Trigger struct {
				FireAt   time.Time `json:"fire_at"`
				Timezone string    `json:"timezone"`
			}
			Session runnerSession
			Message string
		}
		require.NoError(t, json.Unmarshal([]byte(body), &got), body)
		require.True(t, got.Trigger.FireAt.Equal(wall), "fire_at %s, asked %s in New York", got.Trigger.FireAt, wall)
		require.Equal(t, "America/New_York", got.Trigger.Timezone, "stored verbatim and echoed")
		require.Contains(t, got.Message, wall.Format("2006-01-02T15:04:05")+" (America/New_York)", "minute precision, normalised to seconds")
		require.Equal(t, "waiting", got.Session.Status)
		require.Len(t, api.triggers(t, id), 1)

		soon := time.Now().UTC().Add(10 * time.Second).Format("2006-01-02T15:04:05")
		for name, tc := range map[string]struct{ body, code, text string }{
			"an offset":         {`{"wake_at":"2030-04-15T09:30:00+05:00"}`, "unparseable_wake_at", "must not include a UTC offset"},
			"Z in another zone": {`{"wake_at":"2030-04-15T09:30:00Z","timezone":"Europe/Berlin"}`, "unparseable_wake_at", "ends in Z"},
			"a date alone":      {`{"wake_at":"2030-04-15"}`, "unparseable_wake_at", "a date with no time"},
			"an unknown zone":   {`{"wake_at":"2030-04-15T09:30:00","timezone":"Mars/Olympus"}`, "unparseable_wake_at", "not an IANA time zone"},
			"not a time":        {`{"wake_at":"tomorrow"}`, "unparseable_wake_at", "ISO-8601"},
			"the past":          {`{"wake_at":"2020-04-15T09:30:00"}`, "wake_at_too_soon", "No trigger was created and no session state was changed"},
			"inside the grace":  {fmt.Sprintf(`{"wake_at":%q}`, soon), "wake_at_too_soon", "grace window"},
			"a blank prompt":    {`{"wake_at":"2030-04-15T09:30:00","prompt":"  "}`, "missing_prompt", "blank"},
		} {
			code, body := pauseUntil(t, id, tc.body)
			refused(t, code, body, tc.code, tc.text)
			require.Equal(t, 1, armedBefore(), "%s: nothing armed or replaced", name)
		}

		// RFC 3339 with a Z is still UTC.
		at := time.Now().UTC().Add(3 * time.Hour).Truncate(time.Second)
		code, body = pauseUntil(t, id, fmt.Sprintf(`{"wake_at":%q}`, at.Format(time.RFC3339)))
		require.Equal(t, http.StatusOK, code, body)
		armed := api.triggers(t, id)
		require.Len(t, armed, 1)
		require.True(t, armed[0].FireAt.Equal(at), "%s", armed[0].FireAt)
	})

	// Rule 1 from MCP: the agent's wake_me_up_later reads the same rule,
	// and its refusal leads with the code.
	t.Run("wake_me_up_later reads the same rule", func(t *testing.T) {
		t.Parallel()
		wall := time.Now().In(time.UTC).Add(2 * time.Hour).Truncate(time.Second)
		tokyo, err := time.LoadLocation("Asia/Tokyo")
		require.NoError(t, err)
		id := api.createRunning(t, repo, `@demo mcp wake_me_up_later {"wake_at":"2030-04-15T09:30:00+05:00"}`+"\n"+
			fmt.Sprintf(`@demo mcp wake_me_up_later {"wake_at":%q,"timezone":"Asia/Tokyo"}`, wall.In(tokyo).Format("2006-01-02T15:04:05")))
		turns := asleepAfterTurn(t, id)
		require.Contains(t, turns[0].Text, "unparseable_wake_at: wake_at:", turns[0].Text)
		require.Contains(t, turns[0].Text, "must not include a UTC offset")
		armed := api.triggers(t, id)
		require.Len(t, armed, 1)
		require.True(t, armed[0].FireAt.Equal(wall), "%s, asked %s", armed[0].FireAt, wall)
	})

	// Rule 3: agent wakes add up; Pause Until replaces the session's own
	// one-time wake-ups in one commit, never a watcher, never another
	// session's, and the timeline names what it superseded.
	t.Run("Pause Until supersedes the session's own wake-ups only", func(t *testing.T) {
		t.Parallel()
		watched := api.createRunning(t, repo, "@demo sleep 120s")
		api.waitStatus(t, watched, "running")
		id := api.createRunning(t, repo, `@demo mcp wake_me_up_later {"delay":"1h"}`+"\n"+
			`@demo mcp wake_me_up_later {"delay":"2h"}`+"\n"+
			fmt.Sprintf(`@demo mcp wake_me_up_when_session_changes_state {"watched_session_id":%d,"states":["failed"]}`, watched))
		other := api.createRunning(t, repo, `@demo mcp wake_me_up_later {"delay":"1h"}`)
		asleepAfterTurn(t, id)
		asleepAfterTurn(t, other)
		agentWakes := api.triggers(t, id)
		require.Len(t, agentWakes, 3, "agent wakes add up")

		code, body := pauseUntil(t, id, fmt.Sprintf(`{"wake_at":%q}`, ahead(3*time.Hour)))
		require.Equal(t, http.StatusOK, code, body)
		var kinds, sources []string
		for _, tr := range api.triggers(t, id) {
			kinds, sources = append(kinds, tr.Kind), append(sources, tr.Source)
		}
		require.ElementsMatch(t, []string{"one_time", "session_state"}, kinds, "the new wake and the watcher")
		require.ElementsMatch(t, []string{"pause_until", "watch"}, sources)
		require.Len(t, api.triggers(t, other), 1, "another session's wake is untouched")
		var superseded []string
		for _, tr := range agentWakes {
			if tr.Kind == "one_time" {
				superseded = append(superseded, fmt.Sprintf("#%d", tr.ID))
			}
		}
		lines := strings.Join(timeline(t, api, id, "note"), "\n")
		require.Contains(t, lines, "superseding wake-ups "+strings.Join(superseded, ", "), lines)
	})

	// Rule 4: Pause Until refuses an archived session (and a failed one,
	// and one that never started: TestTriggers) where it cannot be paused.
	t.Run("Pause Until refuses an archived session", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say done")
		api.waitStatus(t, id, "needs_input")
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", id), "{}")
		require.Less(t, code, 300, body)
		code, body = pauseUntil(t, id, fmt.Sprintf(`{"wake_at":%q}`, ahead(time.Hour)))
		refused(t, code, body, "not_wakeable", "cannot be paused from here")
	})

	// Rule 5: a watcher sleeps the session that arms it; its refusals
	// name the problem.
	t.Run("a watcher sleeps its session; refusals say why", func(t *testing.T) {
		t.Parallel()
		idle := api.createRunning(t, repo, "@demo say idle")
		gone := api.createRunning(t, repo, "@demo say soon archived")
		running := api.createRunning(t, repo, "@demo sleep 120s")
		api.waitStatus(t, idle, "needs_input")
		api.waitStatus(t, gone, "needs_input")
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", gone), "{}")
		require.Less(t, code, 300, body)
		api.waitStatus(t, running, "running")

		watch := func(watched int64, state string) string {
			return fmt.Sprintf(`@demo mcp wake_me_up_when_session_changes_state {"watched_session_id":%d,"states":[%q]}`, watched, state)
		}
		id := api.createRunning(t, repo, strings.Join([]string{
			watch(idle, "needs_input"), watch(gone, "needs_input"), watch(999999, "failed"), watch(running, "done"),
			watch(running, "needs_input"),
		}, "\n"))
		turns := asleepAfterTurn(t, id)
		for _, want := range []string{
			fmt.Sprintf("session %d is already needs_input", idle),
			fmt.Sprintf("session %d is archived and will not transition further", gone),
			"session 999999 does not exist",
			`"done" cannot be watched`,
		} {
			require.Contains(t, turns[0].Text, want)
		}
		armed := api.triggers(t, id)
		require.Len(t, armed, 1)
		require.Equal(t, running, armed[0].WatchedSessionID)
		require.Equal(t, "waiting", api.session(t, id).Status, "asleep on its watcher")
	})

	// Rule 6: refresh nudges only a stalled session.
	t.Run("refresh nudges only a stalled session", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say first")
		api.waitStatus(t, id, "needs_input")
		r := api.refresh(t, id)
		require.False(t, r.Refreshed, r.Message)
		require.Equal(t, "needs_input", r.Session.Status, "a needs_input session gets the plain re-read")
		require.Len(t, api.timedTurns(t, id), 1, "no turn")

		// Asleep on a wake ahead: left asleep.
		code, body := pauseUntil(t, id, fmt.Sprintf(`{"wake_at":%q}`, ahead(time.Hour)))
		require.Equal(t, http.StatusOK, code, body)
		r = api.refresh(t, id)
		require.False(t, r.Refreshed, r.Message)
		require.Contains(t, r.Message, "asleep")

		// Waiting with nothing ahead (its wake cancelled): stalled, nudged.
		armed := api.triggers(t, id)
		require.Len(t, armed, 1)
		code, body = api.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/sessions/%d/triggers/%d", id, armed[0].ID), "")
		require.Equal(t, http.StatusOK, code, body)
		r = api.refresh(t, id)
		require.True(t, r.Refreshed, r.Message)
		require.Eventually(t, func() bool {
			turns := api.timedTurns(t, id)
			return len(turns) == 2 && turns[1].Ended
		}, 30*time.Second, 100*time.Millisecond, "the nudge's turn never ran")
	})
}
