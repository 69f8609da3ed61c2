package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWhatIsClonedIsCheckedAtCreate is issue 20 item 9 over REST on the
// real binaries: a branch, git_root, subdirectory or agent_runtime that git
// or the runner would refuse (or read as an option) was accepted with 201
// and failed only at clone; each is refused at create with 422 naming the
// field, and nothing is created. And a git_root naming another session's
// clone under the runner's workspaces folder was cloned, so any creator
// could read another session's committed work: the runner refuses it
// before git runs, and the session fails saying why.
func TestWhatIsClonedIsCheckedAtCreate(t *testing.T) {
	t.Parallel()
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	for _, tt := range []struct{ field, value, says string }{
		{"branch", "--upload-pack=touch /tmp/zimmer-owned", "starts with '-'"},
		{"branch", "a..b", "contains '..'"},
		{"git_root", "-c core.sshCommand=touch /tmp/zimmer-owned", "which git would read as an option"},
		{"git_root", "ext::sh -c touch% /tmp/zimmer-owned", "ext::"},
		{"subdirectory", "../../..", "leads out of the repository"},
		{"subdirectory", "/etc", "is an absolute path"},
		{"agent_runtime", "../../bin/sh", "is not an agent runtime"},
	} {
		body := map[string]any{"prompt": "@demo say never", "git_root": repo}
		body[tt.field] = tt.value
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		code, resp := api.do(t, http.MethodPost, "/api/v1/sessions", string(raw))
		require.Equal(t, http.StatusUnprocessableEntity, code, "%s %q: %s", tt.field, tt.value, resp)
		refusal := readError(t, resp)
		all := refusal.Message + " " + strings.Join(refusal.Messages, "; ")
		require.Contains(t, all, tt.field, "the refusal names the field")
		require.Contains(t, all, tt.says)
	}
	code, resp := api.do(t, http.MethodGet, "/api/v1/sessions", "")
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"total_count":0`, "refused creates wrote nothing")

	// Another session's clone, as a path and as a file:// URL.
	victim := api.createRunning(t, repo, "@demo say my work is mine")
	api.waitStatus(t, victim, "needs_input")
	clone := filepath.Join(s.workspaces, fmt.Sprint(victim))
	for _, root := range []string{clone, "file://" + clone} {
		raw, err := json.Marshal(map[string]any{"prompt": "@demo say stolen", "git_root": root})
		require.NoError(t, err)
		code, resp := api.do(t, http.MethodPost, "/api/v1/sessions", string(raw))
		require.Equal(t, http.StatusCreated, code, resp)
		var created struct{ Session runnerSession }
		require.NoError(t, json.Unmarshal([]byte(resp), &created), resp)
		thief := api.waitStatus(t, created.Session.ID, "failed")
		require.Contains(t, thief.FailureReason, "own data folder", "git_root %s: %s", root, thief.FailureReason)
		require.Empty(t, api.timedTurns(t, created.Session.ID), "no turn ran on a stolen clone")
	}
}
