package e2e_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/services/platform/workflowid"
)

// createPushed creates a session running prompt, opted in to the
// needs-input push (push_notifications is off by default: issue 23 rule 8).
func (c restClient) createPushed(t *testing.T, repo, prompt string) int64 {
	t.Helper()
	body, err := json.Marshal(map[string]any{"prompt": prompt, "git_root": repo, "branch": "main", "push_notifications": true})
	require.NoError(t, err)
	return createREST(t, c, string(body))
}

// TestRulesOfRestAndResume drives issue 23's rules 7, 8, 9, 11 and 17's
// trash_after on the real binaries with the demo agent and Temporal: idle
// sessions leave no drain or debounce workflow behind (pushes are opt-in);
// a session asleep on its wake is not woken by the drain of a message
// queued for it, and the wake's turn hands the message over; a resume stales all
// of its session's notifications, failures included, and never another
// session's, and clears the stale MCP-failure markers and nothing else; an
// archived session whose clone was clean holds no trash deadline once the
// clone is deleted, nor one whose preserved work the reaper deleted at the
// deadline; a pause whose only queued message is being delivered schedules
// no drain.
func TestRulesOfRestAndResume(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{
		"runner": {"RUNNER_CLONE_UNDO_WINDOW=1s", "RUNNER_TRASH_REAP_INTERVAL=2s"},
		// A trash deadline a test can wait out: the reaper's reaping at it.
		"lifecycle": {"LIFECYCLE_TRASH_RETENTION=10s"},
	}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	tc, err := client.Dial(client.Options{HostPort: s.temporal, Namespace: s.namespace})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	// started says whether Temporal ever had the workflow id (running or
	// closed): a drain or debounce never scheduled is not found.
	started := func(t *testing.T, workflowID string) bool {
		t.Helper()
		_, err := tc.DescribeWorkflow(t.Context(), workflowID, "")
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return false
		}
		require.NoError(t, err, workflowID)
		return true
	}
	// latestRun is the workflow id's latest run and whether it still runs.
	latestRun := func(t *testing.T, workflowID string) (runID string, running bool) {
		t.Helper()
		d, err := tc.DescribeWorkflow(t.Context(), workflowID, "")
		require.NoError(t, err, workflowID)
		info := d.RawResponse.GetWorkflowExecutionInfo()
		return info.GetExecution().GetRunId(), info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}

	t.Run("idle sessions leave no drain or debounce behind (rules 7, 8)", func(t *testing.T) {
		t.Parallel()
		var idle []int64
		for i := range 3 {
			id := api.createRunning(t, repo, fmt.Sprintf("@demo say idle %d", i))
			require.Equal(t, false, getSession(t, api, id)["push_notifications"], "pushes are opt-in")
			idle = append(idle, id)
		}
		pushed := api.createPushed(t, repo, "@demo say opted in")
		for _, id := range append(idle, pushed) {
			api.waitStatus(t, id, "needs_input")
		}
		// The opted-in pause's debounce is there to be seen, so the others'
		// absence is not a blind spot; by then every pause's effects are in.
		require.Eventually(t, func() bool { return started(t, workflowid.NeedsInputDebounce(pushed)) },
			20*time.Second, 100*time.Millisecond, "the opted-in session's pause never started its debounce")
		time.Sleep(2 * time.Second)
		for _, id := range idle {
			require.False(t, started(t, workflowid.Drain(id)), "session %d: an empty queue needs no drain", id)
			require.False(t, started(t, workflowid.NeedsInputDebounce(id)), "session %d: no push can be sent", id)
		}
		require.False(t, started(t, workflowid.Drain(pushed)), "an empty queue needs no drain")
	})

	t.Run("a session asleep on its wake is not woken by its own queue (rule 7)", func(t *testing.T) {
		t.Parallel()
		// The agent arms its wake while running: its pause goes straight to
		// sleep. (A message queued while it runs is handed over at the turn's
		// end, before the pause: the hot path, not a wake-up.)
		id := api.createRunning(t, repo, `@demo mcp wake_me_up_later {"delay":"35s","prompt":"@demo say woke up"}`+"\n"+
			"@demo say going to sleep")
		var armed []armedTrigger
		require.Eventually(t, func() bool {
			armed = api.triggers(t, id)
			return len(armed) == 1
		}, 60*time.Second, 100*time.Millisecond, "the agent never armed its wake")
		api.waitStatus(t, id, "waiting")
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", id), `{"content":"@demo say the queued message"}`)
		require.Equal(t, http.StatusOK, code, body)

		// Past the drain's delay and attempts, up to the wake: asleep, the
		// message still queued for the wake's turn.
		for time.Now().Before(armed[0].FireAt.Add(-time.Second)) {
			require.Equal(t, "waiting", api.session(t, id).Status, "woken before its wake by its own queue")
			q := api.queue(t, id)
			require.Len(t, q, 1)
			require.Equal(t, "pending", q[0].Status)
			time.Sleep(500 * time.Millisecond)
		}
		require.Eventually(t, func() bool {
			q := api.queue(t, id)
			return len(q) == 1 && q[0].Status == "sent" && api.session(t, id).Status == "needs_input"
		}, 60*time.Second, 200*time.Millisecond, "the wake's turn never handed the queued message over")
		turns := api.timedTurns(t, id)
		require.Len(t, turns, 3, "the first turn, the wake's, the queued message's")
		require.False(t, turns[1].StartedAt.Before(armed[0].FireAt), "the wake's turn started at %s, before %s", turns[1].StartedAt, armed[0].FireAt)
		require.Contains(t, turns[1].Text, "woke up")
		require.Contains(t, turns[2].Text, "the queued message")
	})

	t.Run("a pause whose only queued message is being delivered schedules no drain (rule 7)", func(t *testing.T) {
		t.Parallel()
		// Two running sessions, each with a message queued for it; the
		// in-flight one's is being delivered when the pause lands, the
		// control's is pending.
		inFlight := api.createRunning(t, repo, "@demo sleep 120s")
		control := api.createRunning(t, repo, "@demo sleep 120s")
		runs := map[int64]string{}
		var message int64
		for _, id := range []int64{inFlight, control} {
			api.waitStatus(t, id, "running")
			code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", id), `{"content":"@demo say queued"}`)
			require.Equal(t, http.StatusOK, code, body)
			if id == inFlight {
				var got struct {
					EnqueuedMessage queuedMessage `json:"enqueued_message"`
				}
				require.NoError(t, json.Unmarshal([]byte(body), &got), body)
				message = got.EnqueuedMessage.ID
			}
			// The enqueue pokes the drain itself; it finds the session
			// running and ends. A later poke is a new run.
			require.Eventually(t, func() bool {
				if !started(t, workflowid.Drain(id)) {
					return false
				}
				run, running := latestRun(t, workflowid.Drain(id))
				runs[id] = run
				return !running
			}, 60*time.Second, 200*time.Millisecond, "session %d: the enqueue's drain never ended", id)
		}
		// A deliverer holds its claim for the milliseconds between claiming
		// the message and settling it (QU-5); the claim is held here, as a
		// deliverer holds it, so that the pause lands inside it.
		n, err := s.exec(t, "queue", fmt.Sprintf(`UPDATE enqueued_messages SET status = 'processing', claimed_at = now(),
			lease_id = gen_random_uuid(), lease_expires_at = now() + interval '10 minutes' WHERE id = %d AND status = 'pending'`, message))
		require.NoError(t, err)
		require.EqualValues(t, 1, n)

		for _, id := range []int64{inFlight, control} {
			// A halt that outlasts the call on a loaded machine is answered
			// 503 "retry shortly": the pause is retried as it says.
			require.Eventually(t, func() bool {
				code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause", id), "{}")
				require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable, http.StatusUnprocessableEntity}, code, body)
				return api.session(t, id).Status == "needs_input"
			}, 60*time.Second, time.Second, "session %d never paused", id)
		}
		// The control's pause pokes a new drain: the pauses' effects are in.
		require.Eventually(t, func() bool {
			run, _ := latestRun(t, workflowid.Drain(control))
			return run != runs[control]
		}, 30*time.Second, 200*time.Millisecond, "the control's pause, with a pending message, never poked its drain")
		time.Sleep(2 * time.Second)
		run, _ := latestRun(t, workflowid.Drain(inFlight))
		require.Equal(t, runs[inFlight], run, "a pause whose only message is being delivered started a drain")
		require.Equal(t, "needs_input", api.session(t, inFlight).Status)
	})

	t.Run("a resume stales its session's notifications and clears the MCP-failure markers (rules 9, 11)", func(t *testing.T) {
		t.Parallel()
		body, err := json.Marshal(map[string]any{"prompt": "@demo exit 3", "git_root": repo, "branch": "main", "custom_metadata": map[string]any{
			"should_fail_session": true, "mcp_connection_checked": true, "mcp_failed_servers": []string{"github"},
			"mcp_failure_reason": "github did not connect", "mcp_servers_status": map[string]any{"github": "failed"},
			"ticket": "ZIM-7",
		}})
		require.NoError(t, err)
		resumed := createREST(t, api, string(body))
		other := api.createRunning(t, repo, "@demo exit 3")
		failure := func(id int64) notification {
			t.Helper()
			var list []notification
			require.Eventually(t, func() bool {
				list, _ = api.notifications(t, fmt.Sprintf("session_id=%d&type=failure&include_dismissed=true", id))
				return len(list) == 1
			}, 60*time.Second, 200*time.Millisecond, "no failure notification for session %d", id)
			return list[0]
		}
		for _, id := range []int64{resumed, other} {
			api.waitStatus(t, id, "failed")
			require.False(t, failure(id).Stale)
		}

		require.Len(t, getSession(t, api, resumed)["custom_metadata"], 6, "start and fail leave the markers")
		code, resp := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/restart", resumed), "{}")
		require.Equal(t, http.StatusOK, code, resp)
		require.Eventually(t, func() bool { return failure(resumed).Stale }, 30*time.Second, 200*time.Millisecond,
			"the resume never staled the failure's notification")
		require.False(t, failure(other).Stale, "another session's notification is not the resume's")

		require.Equal(t, map[string]any{"ticket": "ZIM-7"}, getSession(t, api, resumed)["custom_metadata"],
			"the MCP-failure markers are cleared, and nothing else")
	})

	t.Run("an archive whose clone held nothing holds no trash deadline (rule 17)", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say nothing to keep")
		api.waitStatus(t, id, "needs_input")
		api.waitCloneState(t, id, "ready")
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", id), "{}")
		require.Equal(t, http.StatusOK, code, body)
		require.NotEmpty(t, getSession(t, api, id)["trash_after"], "the archive sets the deadline")

		api.waitCloneState(t, id, "reaped")
		require.Eventually(t, func() bool {
			got := getSession(t, api, id)
			return got["status"] == "archived" && (got["trash_after"] == nil || got["trash_after"] == "")
		}, 30*time.Second, 200*time.Millisecond, "the clean clone was deleted, yet the session still holds a trash deadline: %v",
			getSession(t, api, id)["trash_after"])
	})

	t.Run("the trash reaper's deletion at the deadline clears the deadline (rule 17)", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say work to keep")
		api.waitStatus(t, id, "needs_input")
		api.waitCloneState(t, id, "ready")
		gitOut(t, filepath.Join(s.workspaces, fmt.Sprint(id)), "commit", "-q", "--allow-empty", "-m", "unpushed")
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", id), "{}")
		require.Equal(t, http.StatusOK, code, body)
		api.waitCloneState(t, id, "preserved")
		require.NotEmpty(t, getSession(t, api, id)["trash_after"], "the preserved work holds the deadline")

		api.waitCloneState(t, id, "reaped")
		require.Eventually(t, func() bool {
			got := getSession(t, api, id)
			return got["status"] == "archived" && (got["trash_after"] == nil || got["trash_after"] == "")
		}, 30*time.Second, 200*time.Millisecond, "the reaper deleted what the trash kept, yet the session still holds a trash deadline: %v",
			getSession(t, api, id)["trash_after"])
	})
}
