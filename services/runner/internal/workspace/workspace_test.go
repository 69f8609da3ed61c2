package workspace_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

func TestSpecRefusal(t *testing.T) {
	t.Parallel()
	ok := workspace.Spec{SessionID: 1, GitRoot: "https://example.com/r.git"}
	tests := []struct {
		name string
		edit func(*workspace.Spec)
		want string // in the refusal; "" for none
	}{
		{"a URL", func(*workspace.Spec) {}, ""},
		{"an scp-like address", func(s *workspace.Spec) { s.GitRoot = "git@github.com:org/repo.git" }, ""},
		{"an absolute path", func(s *workspace.Spec) { s.GitRoot = "/srv/git/repo" }, ""},
		{"a file URL", func(s *workspace.Spec) { s.GitRoot = "file:///srv/git/repo" }, ""},
		{"a branch and a subdirectory", func(s *workspace.Spec) { s.Branch, s.Subdirectory = "feature/x", "services/api" }, ""},
		{"the root as a subdirectory", func(s *workspace.Spec) { s.Subdirectory = "." }, ""},
		{"a subdirectory that comes back in", func(s *workspace.Spec) { s.Subdirectory = "a/../b" }, ""},
		{"no git_root", func(s *workspace.Spec) { s.GitRoot = "  " }, "git_root is empty"},
		{"git_root as an option", func(s *workspace.Spec) { s.GitRoot = "--upload-pack=touch /tmp/owned" }, "which git would read as an option"},
		{"git_root with a newline", func(s *workspace.Spec) { s.GitRoot = "/srv/repo\n--bare" }, "control character"},
		{"git_root padded", func(s *workspace.Spec) { s.GitRoot = " /srv/repo" }, "leading or trailing spaces"},
		{"a relative git_root", func(s *workspace.Spec) { s.GitRoot = "repos/mine" }, "is a relative path"},
		{"a relative git_root with a colon after a slash", func(s *workspace.Spec) { s.GitRoot = "./a:b" }, "is a relative path"},
		{"a branch as an option", func(s *workspace.Spec) { s.Branch = "--template=/tmp/evil" }, "starts with '-'"},
		{"a branch with a space", func(s *workspace.Spec) { s.Branch = "my branch" }, "space or control character"},
		{"an absolute subdirectory", func(s *workspace.Spec) { s.Subdirectory = "/etc" }, "is an absolute path"},
		{"a subdirectory above the repository", func(s *workspace.Spec) { s.Subdirectory = "../other" }, "leads out of the repository"},
		{"a subdirectory that leaves on the way", func(s *workspace.Spec) { s.Subdirectory = "a/../../other" }, "leads out of the repository"},
		{"a subdirectory in .git", func(s *workspace.Spec) { s.Subdirectory = "./.git/hooks" }, "inside .git"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := ok
			tc.edit(&spec)
			got := spec.Refusal()
			if tc.want == "" {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, tc.want)
			require.Contains(t, got, "create the session again with a valid one", "a refusal says what to do")
		})
	}
}

func TestWorkspaceTransitions(t *testing.T) {
	t.Parallel()
	spec := workspace.Spec{SessionID: 7, GitRoot: "/r", Branch: "main", Subdirectory: "svc"}
	w := workspace.NewWorkspace(spec, "node-a", "/w/7")
	require.Equal(t, workspace.Provisioning, w.State)
	require.Equal(t, spec, w.Spec())
	require.Equal(t, "/w/7/svc", w.Workdir())

	require.NoError(t, w.MarkFailed("git said no"))
	require.Equal(t, workspace.Failed, w.State)
	require.Equal(t, "git said no", w.FailureReason)
	require.Equal(t, &workspace.TransitionError{From: workspace.Failed, To: workspace.Ready}, w.MarkReady(workspace.Checkout{}))

	require.NoError(t, w.Reprovision(spec, "/w2/7"))
	require.Equal(t, workspace.Provisioning, w.State)
	require.Empty(t, w.FailureReason)
	require.Error(t, w.MarkFailed(""), "a failure needs a reason")

	require.NoError(t, w.MarkReady(workspace.Checkout{Branch: "main", Commit: "abc"}))
	require.Equal(t, workspace.Ready, w.State)
	require.Equal(t, "main", w.CheckedOutBranch)
	require.Equal(t, "abc", w.BaseCommit)
	require.Equal(t, &workspace.TransitionError{From: workspace.Ready, To: workspace.Provisioning}, w.Reprovision(spec, "/w/7"),
		"a ready clone is never remade")
	require.Equal(t, &workspace.TransitionError{From: workspace.Ready, To: workspace.Failed}, w.MarkFailed("late"))

	root := workspace.NewWorkspace(workspace.Spec{SessionID: 8, GitRoot: "/r"}, "node-a", "/w/8")
	require.Equal(t, "/w/8", root.Workdir(), "no subdirectory: the clone's root")
}
