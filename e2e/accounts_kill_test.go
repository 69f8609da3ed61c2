package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLoginPoolKill (RN-36, a crash test): the login pool's owner, the
// runner, is killed -9 twice — while sessions park on a spent account (one
// turn hits the demo quota wall; three follow-ups come while the account
// rests, and park before any process starts), and again as the account's
// reset passes, when the refill wakes the parked sessions. Whatever each
// kill cut short — a park recorded but its pause not sent, a refill's
// unpark signals half sent — the restarted runner finishes it: every
// session parks once and is resumed once, its message delivered exactly
// once, nothing failed, and the pool holds no park afterwards.
func TestLoginPoolKill(t *testing.T) {
	t.Parallel()
	skipWithoutChaos(t)
	logins := t.TempDir()
	accounts := fmt.Sprintf(`{"accounts": [{"name": "demo-a", "runtime": "demo", "config_dir": %q}]}`, filepath.Join(logins, "a"))
	file := filepath.Join(t.TempDir(), "accounts.json")
	require.NoError(t, os.WriteFile(file, []byte(accounts), 0o600))
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{"runner": {"RUNNER_ACCOUNTS_FILE=" + file}}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	var ids []int64
	for i := range 4 {
		ids = append(ids, api.createRunning(t, repo, fmt.Sprintf("@demo say first turn %d", i)))
	}
	for _, id := range ids {
		api.waitStatus(t, id, "needs_input")
	}
	followUp := func(id int64, prompt string) {
		body, err := json.Marshal(map[string]any{"prompt": prompt})
		require.NoError(t, err)
		code, resp := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/follow_up", id), string(body))
		require.Equal(t, 200, code, resp)
	}
	messages := map[int64]string{}
	for _, id := range ids {
		messages[id] = fmt.Sprintf("the parked message of %d at %d", id, time.Now().UnixNano())
	}

	// The first session's turn hits the wall: the account rests.
	const wallFor = 45 * time.Second
	followUp(ids[0], "@demo quota-wall "+wallFor.String()+"\n@demo say "+messages[ids[0]])
	var pool map[string]agentAccount
	var listing string
	require.Eventually(t, func() bool {
		pool, listing = api.agentAccounts(t, "demo")
		return !pool["demo-a"].Available
	}, 60*time.Second, 50*time.Millisecond, "the account never rested: %s", listing)
	restsUntil := pool["demo-a"].RestsUntil

	// The others' follow-ups park them while the account rests: the kill
	// lands among those parks (and may catch the first one's pause).
	for _, id := range ids[1:] {
		followUp(id, "@demo say "+messages[id])
	}
	time.Sleep(100 * time.Millisecond)
	s.kill("runner")
	s.start("runner")
	s.waitHealthy("runner")

	parked := func(id int64) bool {
		code, resp := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d", id), "")
		require.Equal(t, 200, code, resp)
		var got struct {
			Session struct {
				Status   string `json:"status"`
				PausedBy string `json:"paused_by"`
			}
		}
		require.NoError(t, json.Unmarshal([]byte(resp), &got), resp)
		return got.Session.Status == "waiting" && got.Session.PausedBy == "auth_outage"
	}
	for _, id := range ids {
		require.Eventually(t, func() bool { return parked(id) }, 90*time.Second, 200*time.Millisecond,
			"session %d never parked: %v", id, api.transitions(t, id))
		require.Zero(t, api.assistantSaid(t, id, messages[id]), "session %d ran its message while its account rested", id)
	}
	pool, listing = api.agentAccounts(t, "demo")
	require.Equal(t, len(ids), pool["demo-a"].ParkedSessions, "no park lost: %s", listing)

	// The refill: the runner dies as the reset passes and comes back a
	// few seconds later; the refill's timer and signals are finished by
	// the restarted one.
	time.Sleep(time.Until(restsUntil.Add(-200 * time.Millisecond)))
	require.True(t, parked(ids[0]), "nothing resumed before the reset")
	s.kill("runner")
	time.Sleep(3 * time.Second)
	s.start("runner")
	s.waitHealthy("runner")

	for _, id := range ids {
		require.Eventually(t, func() bool {
			return api.session(t, id).Status == "needs_input" && api.assistantSaid(t, id, messages[id]) == 1
		}, 2*time.Minute, 250*time.Millisecond, "session %d was never resumed with its message: %v", id, api.transitions(t, id))
	}
	time.Sleep(5 * time.Second) // a late duplicate would show by now
	for _, id := range ids {
		require.Equal(t, 1, api.assistantSaid(t, id, messages[id]), "session %d's message ran once", id)
		tr := api.transitions(t, id)
		require.NotContains(t, tr, "fail", "session %d: a kill is no failure", id)
		sleep := slices.Index(tr, "sleep")
		require.Equal(t, 1, countOf(tr, "sleep"), "session %d parked once: %v", id, tr)
		require.Equal(t, []string{"resume", "pause"}, tr[sleep+1:], "session %d was resumed once: %v", id, tr)
		require.Equal(t, "needs_input", api.session(t, id).Status)
	}
	pool, listing = api.agentAccounts(t, "demo")
	require.True(t, pool["demo-a"].Available, listing)
	require.Zero(t, pool["demo-a"].ParkedSessions, "every park ended: %s", listing)
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
