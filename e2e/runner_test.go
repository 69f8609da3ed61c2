package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// gitRepo makes a one-commit repository to clone.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("demo\n"), 0o644))
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "README.md"},
		{"-c", "user.name=e2e", "-c", "user.email=e2e@example.com", "commit", "-q", "-m", "first"},
	} {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return dir
}

type runnerSession struct {
	ID            int64  `json:"id"`
	Status        string `json:"status"`
	FailureReason string `json:"failure_reason"`
	PausedBy      string `json:"paused_by"`
	RunningJobID  string `json:"running_job_id"`
}

func (c restClient) session(t *testing.T, id int64) runnerSession {
	t.Helper()
	code, body := c.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d", id), "")
	require.Equal(t, 200, code, body)
	var got struct{ Session runnerSession }
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	return got.Session
}

// transitions lists the state machine events the session went through, in
// order, from its event stream.
func (c restClient) transitions(t *testing.T, id int64) []string {
	t.Helper()
	code, body := c.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/events", id), "")
	require.Equal(t, 200, code, body)
	var got struct {
		Events []struct {
			Name    string
			Payload struct{ Events []string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	var out []string
	for _, e := range got.Events {
		if e.Name == "transition" {
			out = append(out, e.Payload.Events...)
		}
	}
	return out
}

func (c restClient) createRunning(t *testing.T, repo, prompt string) int64 {
	t.Helper()
	body, err := json.Marshal(map[string]any{"prompt": prompt, "git_root": repo, "branch": "main"})
	require.NoError(t, err)
	code, resp := c.do(t, "POST", "/api/v1/sessions", string(body))
	require.Equal(t, 201, code, resp)
	var got struct{ Session runnerSession }
	require.NoError(t, json.Unmarshal([]byte(resp), &got))
	require.NotZero(t, got.Session.ID, resp)
	return got.Session.ID
}

func (c restClient) waitStatus(t *testing.T, id int64, want string) runnerSession {
	t.Helper()
	var last runnerSession
	deadline := time.Now().Add(60 * time.Second)
	for {
		if last = c.session(t, id); last.Status == want {
			return last
		}
		if time.Now().After(deadline) {
			// The timeline says what the session went through, so a
			// failure here explains itself.
			t.Fatalf("session %d never reached %s in 60 s: it is %s (%q); its timeline: %s",
				id, want, last.Status, last.FailureReason, c.timelineText(t, id))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSessionsRunTurns: the real binaries, the demo agent, Temporal: a
// created session is cloned and run, and its turn's end is routed by the
// spec (exit 0 → needs_input; exit 3 → failed naming the code; a signal
// Zimmer did not send → recovered three times, then failed).
func TestSessionsRunTurns(t *testing.T) {
	t.Parallel()
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	t.Run("exit 0 reaches needs_input", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo say hello from the e2e test")
		api.waitStatus(t, id, "needs_input")
		require.Equal(t, []string{"start", "pause"}, api.transitions(t, id))
		require.DirExists(t, filepath.Join(s.workspaces, fmt.Sprint(id)), "the clone is in RUNNER_WORKSPACES_DIR")

		// The Web UI finds the session's workflow by its search attributes.
		tc, err := client.Dial(client.Options{HostPort: s.temporal, Namespace: s.namespace})
		require.NoError(t, err)
		defer tc.Close()
		require.Eventually(t, func() bool {
			resp, err := tc.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: s.namespace,
				Query:     fmt.Sprintf("ZimmerSessionId = %d AND ZimmerStatus = 'needs_input' AND ZimmerRuntime = 'demo'", id),
			})
			return err == nil && len(resp.GetExecutions()) == 1 && resp.GetExecutions()[0].GetExecution().GetWorkflowId() == fmt.Sprintf("session/%d", id)
		}, 20*time.Second, 200*time.Millisecond, "no workflow session/%d with its search attributes", id)

		// A follow-up by restart: a deliberate resume, whose turn the runner
		// runs in the same clone, under the job lifecycle named as the
		// session's running_job_id.
		code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/restart", id), `{}`)
		require.Equal(t, 200, code, body)
		var restarted struct{ Session runnerSession }
		require.NoError(t, json.Unmarshal([]byte(body), &restarted), body)
		require.Equal(t, "running", restarted.Session.Status, body)
		require.NotEmpty(t, restarted.Session.RunningJobID, "a restart's session names the job of its turn: %s", body)
		require.Eventually(t, func() bool {
			return slices.Equal(api.transitions(t, id), []string{"start", "pause", "resume", "pause"})
		}, 30*time.Second, 100*time.Millisecond, "the restart's turn never ended: %v", api.transitions(t, id))
		got := api.session(t, id)
		require.Equal(t, "needs_input", got.Status)
		require.Empty(t, got.RunningJobID, "no job owns a paused session")
		code, body = api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/transcript", id), "")
		require.Equal(t, 200, code, body)
		var transcript struct {
			Turns []struct {
				TurnID string `json:"turn_id"`
			}
		}
		require.NoError(t, json.Unmarshal([]byte(body), &transcript), body)
		require.Len(t, transcript.Turns, 2, body)
		require.Equal(t, restarted.Session.RunningJobID, transcript.Turns[0].TurnID,
			"the restart's turn (newest first) ran under the session's running_job_id")
		require.Equal(t, fmt.Sprintf("session-%d/turn-1", id), transcript.Turns[1].TurnID)
	})

	t.Run("exit 3 fails with the reason", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo exit 3")
		got := api.waitStatus(t, id, "failed")
		require.Contains(t, got.FailureReason, "exited with code 3")
		require.Equal(t, []string{"start", "fail"}, api.transitions(t, id))
	})

	t.Run("SIGKILL is recovered three times, then fails", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo signal SIGKILL")
		got := api.waitStatus(t, id, "failed")
		require.Contains(t, got.FailureReason, "SIGKILL")
		require.Contains(t, got.FailureReason, "4 times in a row")
		require.Equal(t, []string{"start", "pause", "resume", "pause", "resume", "pause", "resume", "fail"},
			api.transitions(t, id))
	})

	// The spec's order: the process is halted first (the ladder), then the
	// session leaves running; so by the time the verb answers, no process
	// of the turn is left.
	for verb, want := range map[string]string{"pause": "needs_input", "archive": "archived"} {
		t.Run(verb+" during sleep 60s halts the turn before it answers", func(t *testing.T) {
			t.Parallel()
			id := api.createRunning(t, repo, "@demo sleep 60s")
			api.waitStatus(t, id, "running")
			require.Eventually(t, func() bool { return len(turnProcesses(t, s, id)) > 0 }, 20*time.Second, 50*time.Millisecond,
				"the agent never started")
			code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/%s", id, verb), `{}`)
			require.Equal(t, 200, code, body)
			require.Empty(t, turnProcesses(t, s, id), "the turn's process outlived the %s's answer", verb)
			got := api.session(t, id)
			require.Equal(t, want, got.Status)
			if verb == "pause" {
				require.Equal(t, "user", got.PausedBy)
			}
			time.Sleep(500 * time.Millisecond) // the workflow would route the turn's end now, if it did
			require.Equal(t, want, api.session(t, id).Status, "the runner does not move a session someone else stopped")
			require.Equal(t, []string{"start", verb}, api.transitions(t, id))
		})
	}

	t.Run("a turn ignoring SIGTERM with a grandchild leaves no process after a pause", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo ignore-sigterm\n@demo spawn-grandchild 60s\n@demo sleep 60s")
		require.Eventually(t, func() bool { return len(turnProcesses(t, s, id)) >= 2 }, 20*time.Second, 50*time.Millisecond,
			"the agent and its grandchild never both ran")
		asked := time.Now()
		code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/pause", id), `{}`)
		require.Equal(t, 200, code, body)
		require.Empty(t, turnProcesses(t, s, id), "a process of the turn survived the ladder")
		// SIGTERM grace 3s, SIGKILL grace 1s, the sweep after 1s more; the
		// update's round trips add well under a second.
		require.Less(t, time.Since(asked), 7*time.Second, "the ladder took longer than its graces")
		got := api.session(t, id)
		require.Equal(t, "needs_input", got.Status)
		require.Equal(t, "user", got.PausedBy)
		require.Equal(t, []string{"start", "pause"}, api.transitions(t, id))
	})

	// An agent's grandchild outlives it and is killed by the turn's sweep:
	// its zombie belongs to the runner (the subreaper), which reaps it
	// when it dies, not minutes later at the zombie reaper's schedule.
	t.Run("a grandchild killed by the turn's sweep is reaped at once", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, repo, "@demo spawn-grandchild 60s\n@demo say leaving my grandchild behind")
		api.waitStatus(t, id, "needs_input")
		code, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/transcript", id), "")
		require.Equal(t, 200, code, body)
		var page struct{ Lines []struct{ Raw string } }
		require.NoError(t, json.Unmarshal([]byte(body), &page), body)
		grandchild := 0
		for _, l := range page.Lines {
			var line struct {
				Subtype string
				PID     int
			}
			if json.Unmarshal([]byte(l.Raw), &line) == nil && line.Subtype == "grandchild" {
				grandchild = line.PID
			}
		}
		require.Positive(t, grandchild, "the transcript names the grandchild: %s", body)
		runner := s.procs["runner"].Process.Pid
		// The sweep SIGKILLed it when the turn ended; it must not stay the
		// runner's zombie (RUNNER_ZOMBIE_REAP_INTERVAL is minutes).
		require.Eventually(t, func() bool {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", grandchild))
			if err != nil {
				return true // reaped
			}
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
			return f[1] != fmt.Sprint(runner) // the pid went to someone else
		}, 3*time.Second, 20*time.Millisecond, "grandchild %d lingers as the runner's zombie", grandchild)
	})

	t.Run("a clone failure fails the session saying what git said", func(t *testing.T) {
		t.Parallel()
		id := api.createRunning(t, filepath.Join(repo, "missing"), "@demo say never")
		got := api.waitStatus(t, id, "failed")
		require.NotEmpty(t, strings.TrimSpace(got.FailureReason))
		require.Equal(t, []string{"fail"}, api.transitions(t, id))
	})
}

// turnProcesses lists the pids of the session's turn: the processes whose
// environment names its clone as ZIMMER_WORKDIR (the agent and whatever it
// started, which inherit it).
func turnProcesses(t *testing.T, s *stack, id int64) []string {
	t.Helper()
	marker := "ZIMMER_WORKDIR=" + filepath.Join(s.workspaces, fmt.Sprint(id)) + "\x00"
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []string
	for _, e := range entries {
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // not a process, gone, or not ours
		}
		if strings.Contains(string(environ), marker) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
