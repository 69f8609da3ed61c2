package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// agentAccount is one account of GET /api/v1/agent_accounts.
type agentAccount struct {
	Runtime        string    `json:"runtime"`
	Name           string    `json:"name"`
	Available      bool      `json:"available"`
	RestsUntil     time.Time `json:"rests_until"`
	WallReason     string    `json:"wall_reason"`
	RecentTurns    int       `json:"recent_turns"`
	ParkedSessions int       `json:"parked_sessions"`
}

func (c restClient) agentAccounts(t *testing.T, runtime string) (map[string]agentAccount, string) {
	t.Helper()
	code, body := c.do(t, "GET", "/api/v1/agent_accounts", "")
	require.Equal(t, 200, code, body)
	var got struct{ Accounts []agentAccount }
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	out := map[string]agentAccount{}
	for _, a := range got.Accounts {
		if a.Runtime == runtime {
			out[a.Name] = a
		}
	}
	return out, body
}

// assistantSaid counts the assistant lines of a session's transcript that
// contain text.
func (c restClient) assistantSaid(t *testing.T, id int64, text string) int {
	t.Helper()
	code, body := c.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/transcript", id), "")
	require.Equal(t, 200, code, body)
	var tr struct {
		Lines []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"lines"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &tr), body)
	n := 0
	for _, l := range tr.Lines {
		if l.Kind == "assistant" && strings.Contains(l.Text, text) {
			n++
		}
	}
	return n
}

// TestAQuotaWallParksTheSessionUntilItsAccountRefills: the demo runtime
// with a pool of two logins (RUNNER_ACCOUNTS_FILE). A turn hitting the
// demo quota wall parks its session (waiting, paused_by auth_outage,
// auth_outage_reason) with its message kept; the account rests until its
// reset (GET /api/v1/agent_accounts, admin only, names and state, no
// secret); another account takes the next session's turns; and when the
// reset passes, the refill resumes the parked session with the same
// message, delivered once.
func TestAQuotaWallParksTheSessionUntilItsAccountRefills(t *testing.T) {
	t.Parallel()
	logins := t.TempDir()
	secret := "demo-login-secret-" + fmt.Sprint(time.Now().UnixNano())
	accounts := fmt.Sprintf(`{"accounts": [
		{"name": "demo-a", "runtime": "demo", "config_dir": %q, "env": {"DEMO_LOGIN_TOKEN": %q}},
		{"name": "demo-b", "runtime": "demo", "config_dir": %q, "env": {"DEMO_LOGIN_TOKEN": %q}}
	]}`, filepath.Join(logins, "a"), secret, filepath.Join(logins, "b"), secret)
	file := filepath.Join(t.TempDir(), "accounts.json")
	require.NoError(t, os.WriteFile(file, []byte(accounts), 0o600))
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{"runner": {"RUNNER_ACCOUNTS_FILE=" + file}}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	operator := restClient{base: api.base, key: s.operatorKey}
	repo := gitRepo(t)

	// The first session's conversation begins under the least used
	// account (a tie goes by name), and stays there.
	parked := api.createRunning(t, repo, "@demo say first turn")
	api.waitStatus(t, parked, "needs_input")
	require.Contains(t, api.timelineText(t, parked), `runs under the demo account \"demo-a\"`)

	// Its next message hits the demo quota wall: the login rests a minute,
	// long enough to look at it on a loaded machine.
	const wallFor = time.Minute
	message := "the parked message " + fmt.Sprint(time.Now().UnixNano())
	body, err := json.Marshal(map[string]any{"prompt": "@demo quota-wall " + wallFor.String() + "\n" + message})
	require.NoError(t, err)
	walledAt := time.Now()
	code, resp := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/follow_up", parked), string(body))
	require.Equal(t, 200, code, resp)

	var got struct {
		Session struct {
			Status           string `json:"status"`
			PausedBy         string `json:"paused_by"`
			AuthOutageReason string `json:"auth_outage_reason"`
		}
	}
	require.Eventually(t, func() bool {
		code, resp = api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d", parked), "")
		require.Equal(t, 200, code, resp)
		require.NoError(t, json.Unmarshal([]byte(resp), &got))
		return got.Session.Status == "waiting"
	}, 60*time.Second, 100*time.Millisecond, "the session never parked: %s", resp)
	require.Equal(t, "auth_outage", got.Session.PausedBy, resp)
	require.Contains(t, got.Session.AuthOutageReason, `the demo account "demo-a" hit its usage limit`, resp)
	require.Contains(t, got.Session.AuthOutageReason, "resets at", resp)
	require.Equal(t, 0, api.assistantSaid(t, parked, message), "the walled turn did none of the message")
	require.NotContains(t, api.transitions(t, parked), "fail", "a wall is not the session's failure")

	// The account rests until its reset; the pool says so, to an admin
	// only, with names and state and no secret.
	pool, listing := api.agentAccounts(t, "demo")
	require.False(t, pool["demo-a"].Available, listing)
	rests := pool["demo-a"].RestsUntil
	require.False(t, rests.Before(walledAt.Add(wallFor).Truncate(time.Second)), "rests until its reset: %s", listing)
	require.False(t, rests.After(time.Now().Add(wallFor)), "rests until its reset: %s", listing)
	require.Contains(t, pool["demo-a"].WallReason, "usage limit reached", listing)
	require.Equal(t, 1, pool["demo-a"].ParkedSessions, listing)
	require.True(t, pool["demo-b"].Available, listing)
	require.NotContains(t, listing, secret, "a login's secret is never answered")
	require.NotContains(t, listing, logins, "nor its configuration directory")
	code, resp = operator.do(t, "GET", "/api/v1/agent_accounts", "")
	require.Equal(t, 403, code, "an operator key may not read the pools: %s", resp)

	// Another account takes the next turns.
	other := api.createRunning(t, repo, "@demo say second session")
	api.waitStatus(t, other, "needs_input")
	require.Contains(t, api.timelineText(t, other), `runs under the demo account \"demo-b\"`)
	require.Equal(t, "waiting", api.session(t, parked).Status, "the parked session stays parked while its account rests")

	// The reset passes: the refill resumes the parked session with the
	// same message, delivered once.
	require.Eventually(t, func() bool { return api.session(t, parked).Status == "needs_input" },
		wallFor+2*time.Minute, 200*time.Millisecond, "the refill never resumed the parked session")
	require.GreaterOrEqual(t, time.Since(walledAt), wallFor-time.Second, "not resumed before the reset")
	require.Equal(t, 1, api.assistantSaid(t, parked, message), "the parked message ran once")
	timeline := api.timelineText(t, parked)
	require.Contains(t, timeline, "[Accounts] parked until the login pool refills")
	require.Equal(t, []string{"start", "pause", "resume", "pause", "sleep", "resume", "pause"}, api.transitions(t, parked))
	pool, listing = api.agentAccounts(t, "demo")
	require.True(t, pool["demo-a"].Available, listing)
	require.Equal(t, 0, pool["demo-a"].ParkedSessions, listing)
}
