package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type sessionClone struct {
	State      string `json:"state"`
	Path       string `json:"path"`
	Node       string `json:"node"`
	TrashAfter string `json:"trash_after"`
	Note       string `json:"note"`
	Artifacts  *struct {
		Dir        string `json:"dir"`
		BundlePath string `json:"bundle_path"`
		PatchPath  string `json:"patch_path"`
	} `json:"artifacts"`
}

func (c restClient) clone(t *testing.T, id int64) (int, sessionClone) {
	t.Helper()
	code, body := c.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/clone", id), "")
	var got struct{ Clone sessionClone }
	if code == 200 {
		require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	}
	return code, got.Clone
}

func (c restClient) waitCloneState(t *testing.T, id int64, want string) sessionClone {
	t.Helper()
	var last sessionClone
	require.Eventually(t, func() bool {
		var code int
		code, last = c.clone(t, id)
		return code == 200 && last.State == want
	}, 60*time.Second, 200*time.Millisecond, "session %d's clone never became %s (last %+v)", id, want, last)
	return last
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=e2e", "-c", "user.email=e2e@example.com"}, args...)...).CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// TestArchivePreservesTheClonesWorkAndUnarchiveRestoresIt (issue 15): the
// real binaries, lifecycle's effects delivered to the runner. A session's
// clone with an unpushed commit and uncommitted and untracked work is
// archived: after the undo window the work is in the runner's preservation
// store and the clone deleted (the session's clone detail says where, how
// big, until when); unarchive brings the clone back at its path byte for
// byte, and the session's next turn runs in it.
func TestArchivePreservesTheClonesWorkAndUnarchiveRestoresIt(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{"runner": {"RUNNER_CLONE_UNDO_WINDOW=1s"}}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	id := api.createRunning(t, gitRepo(t), "@demo say hello")
	api.waitStatus(t, id, "needs_input")
	ready := api.waitCloneState(t, id, "ready")
	clone := filepath.Join(s.workspaces, fmt.Sprint(id))
	require.Equal(t, clone, ready.Path)

	gitOut(t, clone, "commit", "-q", "--allow-empty", "-m", "unpushed")
	binary := []byte{0, 0xff, 1, 2, 0, '\n', 7}
	require.NoError(t, os.WriteFile(filepath.Join(clone, "notes.bin"), binary, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(clone, "README.md"), []byte("edited\n"), 0o644))
	head, status := gitOut(t, clone, "rev-parse", "HEAD"), gitOut(t, clone, "status", "--porcelain")

	code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/archive", id), "{}")
	require.Equal(t, 200, code, body)
	preserved := api.waitCloneState(t, id, "preserved")
	// The runner records the preservation before it deletes the clone (a
	// crash between the two leaves a clone the retry deletes): the
	// directory goes a moment after the state says preserved.
	require.Eventually(t, func() bool { _, err := os.Stat(clone); return os.IsNotExist(err) },
		10*time.Second, 20*time.Millisecond, "the preserved clone %s is deleted", clone)
	require.NotNil(t, preserved.Artifacts, "%+v", preserved)
	require.FileExists(t, preserved.Artifacts.BundlePath)
	require.FileExists(t, preserved.Artifacts.PatchPath)
	require.NotEmpty(t, preserved.TrashAfter)
	require.Contains(t, preserved.Note, preserved.Artifacts.Dir)

	code, body = api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/unarchive", id), "{}")
	require.Equal(t, 200, code, body)
	api.waitCloneState(t, id, "ready")
	require.Equal(t, head, gitOut(t, clone, "rev-parse", "HEAD"))
	require.Equal(t, status, gitOut(t, clone, "status", "--porcelain"))
	got, err := os.ReadFile(filepath.Join(clone, "notes.bin"))
	require.NoError(t, err)
	require.Equal(t, binary, got)
	require.NoDirExists(t, preserved.Artifacts.Dir, "applied, the artifacts are gone")

	code, body = api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/follow_up", id), `{"prompt": "@demo say hello again"}`)
	require.Contains(t, []int{200, 202}, code, body)
	require.Eventually(t, func() bool {
		return len(api.transitions(t, id)) >= 6 && api.session(t, id).Status == "needs_input"
	}, 60*time.Second, 200*time.Millisecond, "the restored session's next turn never ran: %v", api.transitions(t, id))
	got, err = os.ReadFile(filepath.Join(clone, "notes.bin"))
	require.NoError(t, err)
	require.Equal(t, binary, got, "the turn ran in the restored clone, which kept its work")
}
