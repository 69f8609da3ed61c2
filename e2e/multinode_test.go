package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cloneOf is the session's clone (clone_test's restClient.clone), which
// must exist.
func cloneOf(t *testing.T, api restClient, id int64) sessionClone {
	t.Helper()
	code, c := api.clone(t, id)
	require.Equal(t, http.StatusOK, code, "session %d has no clone", id)
	return c
}

// startSecondRunner starts another runner process of the stack, named
// name, as node with its own workspaces folder and gRPC address; it shares
// the runner's database and everything else. Lifecycle's runner_turns still
// go to the stack's first runner: which node holds a session is decided by
// who takes its first clone from zimmer-runner-clones, not by who received
// its request.
func (s *stack) startSecondRunner(name, node, workspaces string) {
	s.t.Helper()
	s.addr[name] = freeAddr(s.t)
	s.launch(name, "runner", append(append(s.env("runner"), s.extraEnv["runner"]...),
		"RUNNER_GRPC_ADDR="+s.addr[name], "RUNNER_NODE="+node, "RUNNER_WORKSPACES_DIR="+workspaces))
	s.waitHealthy(name)
}

// killAgentsIn SIGKILLs every process whose ZIMMER_WORKDIR is under dir:
// a node's machine dying takes its agents with it, which a runner process
// killed on a shared machine does not.
func killAgentsIn(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for kv := range strings.SplitSeq(string(environ), "\x00") {
			if strings.HasPrefix(kv, "ZIMMER_WORKDIR="+dir+string(filepath.Separator)) && syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
	}
	return killed
}

// agentWorkdirs are the ZIMMER_WORKDIR of the session's live agents.
func agentWorkdirs(t *testing.T, w *agentWatch, id int64) []string {
	t.Helper()
	var dirs []string
	for _, pid := range w.agents(id) {
		environ, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if err != nil {
			continue
		}
		for kv := range strings.SplitSeq(string(environ), "\x00") {
			if v, ok := strings.CutPrefix(kv, "ZIMMER_WORKDIR="); ok {
				dirs = append(dirs, v)
			}
		}
	}
	return dirs
}

// TestMultiNode is issue 15's two nodes: two runner processes on loopback
// (RUNNER_NODE a and b, each with its own workspaces folder and task
// queue). A session's clone is on the node that took it, and its turns run
// there; when node b dies (its runner and its agents, killed) past
// RUNNER_NODE_DEAD_AFTER, its sessions mid-turn fail with a reason naming
// b, node a's sessions go on, and a restart runs b's sessions on a, in a
// clone made anew there.
func TestMultiNode(t *testing.T) {
	skipWithoutChaos(t)
	t.Parallel()
	const deadAfter = 20 * time.Second
	dirB := t.TempDir()
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{
		"runner": {"RUNNER_NODE=a", "RUNNER_NODE_DEAD_AFTER=" + deadAfter.String()},
	}})
	dirA := s.workspaces
	s.startSecondRunner("runner-b", "b", dirB)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	watch := watchAgents(t, s, dirB)
	dirOf := map[string]string{"a": dirA, "b": dirB}

	// Sessions until both nodes hold at least two.
	onNode := map[string][]int64{}
	for len(onNode["a"]) < 2 || len(onNode["b"]) < 2 {
		require.Less(t, len(onNode["a"])+len(onNode["b"]), 24, "one node took every clone: %v", onNode)
		id := api.createRunning(t, repo, "@demo say the first turn")
		api.waitStatus(t, id, "needs_input")
		c := cloneOf(t, api, id)
		require.Contains(t, dirOf, c.Node, "session %d's clone is on an unknown node: %+v", id, c)
		require.Equal(t, filepath.Join(dirOf[c.Node], fmt.Sprint(id)), c.Path, "session %d's clone is in its node's folder", id)
		require.DirExists(t, c.Path)
		onNode[c.Node] = append(onNode[c.Node], id)
	}
	t.Logf("clones: node a %v, node b %v", onNode["a"], onNode["b"])

	// Their next turns run on the node that holds the clone: the agent
	// works in that node's folder.
	for node, ids := range onNode {
		for _, id := range ids {
			code, got := api.followUp(t, id, `{"prompt":"@demo sleep 60s\nthe second turn"}`)
			require.Equal(t, http.StatusOK, code, "%+v", got)
			require.Eventually(t, func() bool { return len(watch.agents(id)) == 1 }, 30*time.Second, 100*time.Millisecond,
				"session %d's second turn never started", id)
			require.Equal(t, []string{filepath.Join(dirOf[node], fmt.Sprint(id))}, agentWorkdirs(t, watch, id),
				"session %d's turn runs in its clone on node %s", id, node)
		}
	}

	// Node b dies mid-turn, its agents with it.
	s.kill("runner-b")
	t.Logf("node b killed with %d of its agents", killAgentsIn(t, dirB))
	died := time.Now()

	// Its sessions fail naming it, once the lost turns' heartbeats time
	// out (30 s) and node b leaves their StopTurn unserved for deadAfter.
	for _, id := range onNode["b"] {
		var got runnerSession
		require.Eventually(t, func() bool {
			got = api.session(t, id)
			return got.Status == "failed"
		}, 30*time.Second+deadAfter+60*time.Second, 500*time.Millisecond, "session %d of dead node b never failed: %+v", id, got)
		require.Contains(t, got.FailureReason, `"b"`, "session %d's reason names the node", id)
		t.Logf("session %d: %s", id, got.FailureReason)
	}
	t.Logf("node b's sessions failed %s after it died", time.Since(died).Round(time.Second))
	// Node a's went on: still running their second turns, or done with them.
	for _, id := range onNode["a"] {
		got := api.session(t, id)
		require.Contains(t, []string{"running", "needs_input"}, got.Status, "session %d of live node a: %+v", id, got)
		require.Empty(t, got.FailureReason)
	}

	// A restart runs each on node a, in a clone made anew there.
	for _, id := range onNode["b"] {
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/restart", id), `{}`)
		require.Equal(t, http.StatusOK, code, body)
	}
	for _, id := range onNode["b"] {
		api.waitStatus(t, id, "needs_input")
		c := cloneOf(t, api, id)
		require.Equal(t, "a", c.Node, "session %d's clone after the restart: %+v", id, c)
		require.Equal(t, filepath.Join(dirA, fmt.Sprint(id)), c.Path)
		require.DirExists(t, c.Path)
		turns := api.timedTurns(t, id)
		require.True(t, turns[len(turns)-1].Ended, "session %d's restart turn ran to its end", id)
	}
	for id, seen := range watch.twoProcesses() {
		t.Errorf("session %d had two agent processes: %s", id, seen)
	}
}
