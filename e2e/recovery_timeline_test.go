package e2e_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
)

// TestADeadAgentFoundIsParkedAndTheSweepPicksItUp (issue 23, rules 12 and
// 13): a session that stands running with no live turn — an admin's raw
// resume naming a job nothing runs — is what the orphan sweep finds as a
// dead agent. With nothing queued, recovery parks it (needs_input,
// paused_by: recovery) and says on its timeline that the process "is no
// longer running"; the sweep's next pass picks it up and resumes it with
// the nudge, which the timeline names with its path. With messages queued,
// the first is delivered at once and the rest stay pending behind it.
func TestADeadAgentFoundIsParkedAndTheSweepPicksItUp(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{
		"runner": {"RUNNER_ORPHAN_SWEEP_INTERVAL=2s", "RUNNER_ORPHAN_GRACE=4s"},
	}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	idle := api.createRunning(t, repo, "@demo say first")
	queued := api.createRunning(t, repo, "@demo say first")
	api.waitStatus(t, idle, "needs_input")
	api.waitStatus(t, queued, "needs_input")

	ghost := func(id int64) {
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/transition", id),
			`{"event": "resume", "running_job_id": "ghost/turn"}`)
		require.Equal(t, http.StatusOK, code, body)
	}
	ghost(idle)
	ghost(queued)
	for _, prompt := range []string{"@demo sleep 15s", "@demo say second"} {
		code, got := api.followUp(t, queued, fmt.Sprintf(`{"prompt": %q}`, prompt))
		require.Equal(t, http.StatusAccepted, code, "queued behind the running session: %+v", got)
	}

	// Nothing queued: parked, and the timeline says why.
	var got runnerSession
	require.Eventually(t, func() bool {
		got = api.session(t, idle)
		return got.Status == "needs_input" && got.PausedBy == "recovery"
	}, 60*time.Second, 100*time.Millisecond, "session %d was never parked: %+v", idle, got)
	parked := "[Recovery] The agent's process of turn ghost/turn is no longer running (the session had no live turn), " +
		"and nothing is queued for it: Zimmer parked the session (needs_input, paused_by: recovery) for a human or " +
		"the orphan sweep to pick up, instead of resuming it at once."
	// The park's line follows its transition (a note written once the
	// pause landed), so it may be a moment behind the status.
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(timeline(t, api, idle, "warning"), func(l string) bool { return strings.HasPrefix(l, parked) })
	}, 10*time.Second, 100*time.Millisecond, "the park's warning: %q", timeline(t, api, idle, "warning"))

	// The sweep's next pass picks it up: the nudge, named with its path.
	require.Eventually(t, func() bool {
		got = api.session(t, idle)
		return got.Status == "needs_input" && got.PausedBy == ""
	}, 90*time.Second, 200*time.Millisecond, "session %d was never picked up: %+v", idle, got)
	require.Equal(t, []string{"start", "pause", "resume", "pause", "resume", "pause"}, api.transitions(t, idle),
		"the raw resume, the park, the sweep's recovery and its turn's end")
	nudged := slices.ContainsFunc(timeline(t, api, idle, "note"), func(l string) bool {
		return strings.Contains(l, "Zimmer resumed the session with the recovery nudge (path: orphan sweep; recovery 1 of 12)")
	})
	require.True(t, nudged, "%q", timeline(t, api, idle, "note"))
	code, body := api.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/transcript", idle), "")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "Recovery path: orphan sweep")

	// Messages queued: the first is delivered at once, the second stays
	// pending while it runs, and nothing is parked.
	statuses := func() map[string]string {
		out := map[string]string{}
		for _, m := range api.queue(t, queued) {
			out[m.Content] = m.Status
		}
		return out
	}
	require.Eventually(t, func() bool {
		q := statuses()
		return q["@demo sleep 15s"] == "sent" && q["@demo say second"] == "pending"
	}, 60*time.Second, 100*time.Millisecond, "the first message was never handed over: %+v", api.queue(t, queued))
	handedOver := slices.ContainsFunc(timeline(t, api, queued, "note"), func(l string) bool {
		return strings.Contains(l, "the queue's next message runs instead of the recovery nudge") &&
			strings.Contains(l, "the rest of the queue stays pending behind it")
	})
	require.True(t, handedOver, "%q", timeline(t, api, queued, "note"))
	require.Equal(t, "running", api.session(t, queued).Status)
	require.Eventually(t, func() bool {
		return statuses()["@demo say second"] == "sent" && api.session(t, queued).Status == "needs_input"
	}, 60*time.Second, 200*time.Millisecond, "the second message never followed: %+v", api.queue(t, queued))
	for _, l := range timeline(t, api, queued, "warning") {
		require.NotContains(t, l, "is no longer running", "a session with messages queued is not parked")
	}
}

// TestTerminationIsToldOnTheTimeline (issue 23, rule 14): each step of the
// termination ladder is a line on the timeline of the session whose agent
// it stopped, the last with the original's result word, which the
// runner's InterruptTurn answers too.
func TestTerminationIsToldOnTheTimeline(t *testing.T) {
	t.Parallel()
	// A short SIGTERM grace leaves the pause's bound (the graces plus 10 s)
	// its slack on a loaded machine.
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{"runner": {"RUNNER_SIGTERM_GRACE=1s"}}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	polite := api.createRunning(t, repo, "@demo say ready\n@demo sleep 300s")
	stubborn := api.createRunning(t, repo, "@demo ignore-sigterm\n@demo say ready\n@demo sleep 300s")
	for _, id := range []int64{polite, stubborn} {
		require.Eventually(t, func() bool {
			turns := api.turns(t, id)
			return len(turns) == 1 && strings.Contains(turns[0].Text, "ready")
		}, 60*time.Second, 100*time.Millisecond, "session %d's agent never said it was ready", id)
	}

	// Lifecycle's call before a pause or an archive, made directly: SIGTERM
	// is enough.
	runner := runnerv1.NewRunnerServiceClient(s.dial("runner", s.asService("lifecycle")))
	resp, err := runner.InterruptTurn(t.Context(), &runnerv1.InterruptTurnRequest{SessionId: polite, Reason: "e2e"})
	require.NoError(t, err)
	require.True(t, resp.GetInterrupted())
	require.Equal(t, "terminated", resp.GetResult(), "the original's result word")
	turn := fmt.Sprintf("session-%d/turn-1", polite)
	lines := processLines(t, api, polite)
	require.Len(t, lines, 1, "%q", lines)
	require.Regexp(t, `^\[Process\] SIGTERM sent to the process group of turn `+turn+`'s agent \(pid \d+\)\. Result: terminated\.`, lines[0])

	// A user's pause of an agent that ignores SIGTERM: escalated.
	code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause", stubborn), "{}")
	require.Equal(t, http.StatusOK, code, body)
	turn = fmt.Sprintf("session-%d/turn-1", stubborn)
	lines = processLines(t, api, stubborn)
	require.Len(t, lines, 2, "%q", lines)
	require.Contains(t, lines[0], "SIGTERM sent to the process group of turn "+turn+"'s agent")
	require.Contains(t, lines[1], "outlived SIGTERM's 1s grace: escalated to SIGKILL, its group first. Result: terminated.")
	got := api.session(t, stubborn)
	require.Equal(t, "needs_input", got.Status)
	require.Equal(t, "user", got.PausedBy)
}

// processLines are the lines the runner wrote about a session's agent
// processes.
func processLines(t *testing.T, api restClient, id int64) []string {
	t.Helper()
	var out []string
	for _, l := range timeline(t, api, id, "note") {
		if strings.HasPrefix(l, "[Process] ") {
			out = append(out, l)
		}
	}
	return out
}
