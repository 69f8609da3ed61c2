package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// TestKilledRunnerMidTurnIsRecoveredOnce: kill -9 the runner while a
// session's agent works. The agent survives its runner (its own process
// group); the restarted runner kills it before it serves its node's queue;
// once the lost turn's heartbeat times out, the workflow proves the process
// gone (StopTurn on the node) and recovers the session once, with the
// nudge naming its path — and at no moment do two agent processes run for
// the session.
func TestKilledRunnerMidTurnIsRecoveredOnce(t *testing.T) {
	skipWithoutChaos(t)
	t.Parallel()
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	id := api.createRunning(t, gitRepo(t), "@demo sleep 300s")
	api.waitStatus(t, id, "running")
	var first []string
	require.Eventually(t, func() bool { first = turnProcesses(t, s, id); return len(first) > 0 },
		30*time.Second, 100*time.Millisecond, "the agent never started")

	// Temporal has the turn's heartbeat saying the conversation began (the
	// recovery resumes it rather than replaying the start).
	tc, err := client.Dial(client.Options{HostPort: s.temporal, Namespace: s.namespace})
	require.NoError(t, err)
	defer tc.Close()
	require.Eventually(t, func() bool {
		d, err := tc.DescribeWorkflow(t.Context(), fmt.Sprintf("session/%d", id), "")
		if err != nil {
			return false
		}
		pending := d.RawResponse.GetPendingActivities()
		if len(pending) != 1 || len(pending[0].GetHeartbeatDetails().GetPayloads()) == 0 {
			return false
		}
		var progress struct{ RuntimeSessionID string }
		return json.Unmarshal(pending[0].GetHeartbeatDetails().GetPayloads()[0].GetData(), &progress) == nil &&
			progress.RuntimeSessionID != ""
	}, 20*time.Second, 100*time.Millisecond, "the turn never heartbeat its conversation")

	// Watch /proc for the whole test: never two agents for the session.
	var (
		mu      sync.Mutex
		most    int
		stopped = make(chan struct{})
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			select {
			case <-stopped:
				return
			case <-time.After(100 * time.Millisecond):
			}
			n := len(agentsOf(s, id))
			mu.Lock()
			most = max(most, n)
			mu.Unlock()
		}
	}()
	defer func() { close(stopped); <-done }()

	killed := time.Now()
	s.kill("runner")
	require.ElementsMatch(t, first, turnProcesses(t, s, id), "the agent outlives its runner's kill -9")
	s.start("runner")
	s.waitHealthy("runner")
	require.Eventually(t, func() bool {
		return !slices.ContainsFunc(turnProcesses(t, s, id), func(p string) bool { return slices.Contains(first, p) })
	}, 15*time.Second, 100*time.Millisecond, "the restarted runner never killed its predecessor's agent")

	// The recovery turn says its nudge (the demo agent echoes a prompt it
	// has no directive for) and exits 0.
	// At rest after the recovery turn (not in the pause between the lost
	// turn and the recovery, which carries paused_by: recovery).
	var got runnerSession
	require.Eventually(t, func() bool {
		got = api.session(t, id)
		return got.Status == "needs_input" && got.PausedBy == ""
	}, 120*time.Second, 200*time.Millisecond, "session %d never came to rest after its recovery", id)
	require.Empty(t, got.FailureReason)
	require.Equal(t, []string{"start", "pause", "resume", "pause"}, api.transitions(t, id),
		"recovered exactly once: parked as a recovery, resumed, and its turn ended")
	code, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/transcript", id), "")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, "Recovery path: interrupted turn", "the nudge names its path")
	told := slices.ContainsFunc(timeline(t, api, id, "note"), func(l string) bool {
		return strings.HasPrefix(l, fmt.Sprintf("[Recovery] Turn session-%d/turn-1 was lost (no heartbeat from node ", id)) &&
			strings.Contains(l, "Zimmer resumed the session with the recovery nudge (path: interrupted turn; recovery 1 of 12)")
	})
	require.True(t, told, "the timeline says what recovery decided and why: %q", timeline(t, api, id, "note"))

	// How long recovery took, against the heartbeat timeout that bounds it
	// from below (docs/benchmarks.md, Recovery).
	code, body = api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/timeline", id), "")
	require.Equal(t, 200, code, body)
	var lines struct {
		Timeline []struct {
			Message   string    `json:"message"`
			CreatedAt time.Time `json:"created_at"`
		} `json:"timeline"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &lines))
	for _, l := range lines.Timeline {
		if strings.Contains(l.Message, "needs_input → running (resume)") {
			t.Logf("recovery turn resumed %.1f s after the kill (RunTurn's heartbeat timeout: 30 s)", l.CreatedAt.Sub(killed).Seconds())
		}
	}

	// The lost turn's credential is revoked too: every credential minted
	// for a turn ends with it.
	code, body = api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/timeline", id), "")
	require.Equal(t, 200, code, body)
	// Revoked by RunTurn, by the workflow at the turn's end, or by the
	// restarted runner's sweep of its node: whichever came first. Each is
	// one line on the timeline, its mint's; the revocation is the
	// credential's own record, in lifecycle's database.
	minted := strings.Count(body, "minted (scopes")
	require.Equal(t, 2, minted, body)
	require.Zero(t, len(credentialRevoked.FindAllString(body, -1)), "the runner's revocations write no line: %s", body)
	require.Equal(t, minted, s.queryInt(t, "lifecycle", `SELECT count(*) FROM session_credentials WHERE session_id = $1`, id))
	require.Zero(t, s.queryInt(t, "lifecycle", `SELECT count(*) FROM session_credentials WHERE session_id = $1 AND revoked_at IS NULL`, id),
		"a credential outlived its turn")

	mu.Lock()
	defer mu.Unlock()
	require.LessOrEqual(t, most, 1, "two agent processes ran for one session at once")
}

// credentialRevoked is a timeline line of a revoked credential.
var credentialRevoked = regexp.MustCompile(`\[Credentials\] session credential [0-9a-f-]{36} revoked: `)

// agentsOf is turnProcesses for a goroutine: it cannot fail the test.
func agentsOf(s *stack, id int64) []string {
	marker := "ZIMMER_WORKDIR=" + filepath.Join(s.workspaces, fmt.Sprint(id)) + "\x00"
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		if environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil && strings.Contains(string(environ), marker) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestKilledRunnerCutsOffItsTurnOnTheTranscript: kill -9 the runner while a
// session's agent works. What the agent prints after that is read by no
// one; the restarted runner, which kills the agent it left, ends that turn
// on the transcript: its last line says it was cut off and by what, and the
// turn has an outcome.
func TestKilledRunnerCutsOffItsTurnOnTheTranscript(t *testing.T) {
	skipWithoutChaos(t)
	t.Parallel()
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	id := api.createRunning(t, gitRepo(t), "@demo say before the crash\n@demo sleep 300s\n@demo say after the crash")
	api.waitStatus(t, id, "running")
	type page struct {
		Turns []struct {
			TurnID  string `json:"turn_id"`
			Outcome string
			EndedAt *time.Time `json:"ended_at"`
		}
		Lines []struct {
			TurnID  string `json:"turn_id"`
			Type    string
			Text    string
			IsError bool `json:"is_error"`
		}
	}
	lostTurn := fmt.Sprintf("session-%d/turn-1", id)
	read := func() page {
		code, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/transcript?turn=%s", id, lostTurn), "")
		require.Equal(t, 200, code, body)
		var p page
		require.NoError(t, json.Unmarshal([]byte(body), &p), body)
		return p
	}
	require.Eventually(t, func() bool {
		p := read()
		return len(p.Lines) > 0 && strings.Contains(p.Lines[len(p.Lines)-1].Text, "before the crash")
	}, 30*time.Second, 100*time.Millisecond, "the agent never said its first words")

	s.kill("runner")
	s.start("runner")
	s.waitHealthy("runner")
	var got page
	require.Eventually(t, func() bool {
		got = read()
		return len(got.Turns) == 1 && got.Turns[0].Outcome != ""
	}, 15*time.Second, 100*time.Millisecond, "the lost turn never got an ending")
	require.Contains(t, got.Turns[0].Outcome, "cut off")
	require.NotNil(t, got.Turns[0].EndedAt)
	last := got.Lines[len(got.Lines)-1]
	require.Equal(t, "zimmer/cut_off", last.Type)
	require.True(t, last.IsError)
	require.Contains(t, last.Text, "This turn was cut off: the runner on node")
	require.Contains(t, last.Text, "SIGKILL")
}
