package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTurnCredentialDiesWithAStoppedStack is issue 20's first item: a stack
// stopped mid-turn the way Ctrl-C stops make run (lifecycle already down
// when the runner's own revocation of the turn's credential is tried, so
// that one meets Unavailable), then started again: the turn's credential
// opens nothing any more, for a read, an edit or a child session.
func TestTurnCredentialDiesWithAStoppedStack(t *testing.T) {
	t.Parallel()
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	id := api.createRunning(t, gitRepo(t), "@demo sleep 120s")
	api.waitStatus(t, id, "running")
	var token string
	require.Eventually(t, func() bool { token = agentToken(s, id); return token != "" },
		30*time.Second, 100*time.Millisecond, "the agent never started with its credential")
	agent := restClient{base: api.base, bearer: token}
	code, body := agent.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", id), "")
	require.Equal(t, http.StatusOK, code, "the turn's credential opens its session while the turn runs: %s", body)

	// Ctrl-C: lifecycle is down first, then everything else stops at once.
	require.NoError(t, s.interrupt("lifecycle"))
	var wg sync.WaitGroup
	for _, name := range append([]string{"gateway"}, services...) {
		if name == "lifecycle" {
			continue
		}
		wg.Go(func() {
			if err := s.interrupt(name); err != nil {
				t.Errorf("stop %s: %v", name, err)
			}
		})
	}
	wg.Wait()

	for _, svc := range services {
		s.start(svc)
	}
	s.start("gateway")
	for _, svc := range services {
		s.waitHealthy(svc)
	}
	s.waitGateway()

	require.Eventually(t, func() bool {
		code, _ := agent.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", id), "")
		return code == http.StatusUnauthorized
	}, 60*time.Second, 250*time.Millisecond, "the stopped turn's credential still opens its session after the restart")
	code, body = agent.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", id), "")
	require.Equal(t, http.StatusUnauthorized, code, body)
	require.Contains(t, body, "credential revoked", "the refusal says why")
	code, body = agent.do(t, http.MethodPatch, fmt.Sprintf("/api/v1/sessions/%d", id), `{"title": "still mine"}`)
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, body = agent.do(t, http.MethodPost, "/api/v1/sessions", `{"prompt": "a child", "git_root": "/nonexistent", "branch": "main"}`)
	require.Equal(t, http.StatusUnauthorized, code, body)
}

// agentToken is ZIMMER_MCP_TOKEN of the session's live agent, "" while it
// has none.
func agentToken(s *stack, id int64) string {
	marker := "ZIMMER_WORKDIR=" + filepath.Join(s.workspaces, fmt.Sprint(id)) + "\x00"
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !strings.Contains(string(environ), marker) {
			continue
		}
		for kv := range strings.SplitSeq(string(environ), "\x00") {
			if v, ok := strings.CutPrefix(kv, "ZIMMER_MCP_TOKEN="); ok && v != "" {
				return v
			}
		}
	}
	return ""
}
