package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// GitSetup runs git in dir for a test's own setup: a fixed identity, no
// user or system config. Exported to the package's external tests too
// (gitIn), so both sets set up repositories the same way.
func GitSetup(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", append([]string{
		"-c", "user.name=Zimmer Test", "-c", "user.email=test@zimmer.invalid", "-c", "commit.gpgsign=false",
	}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	require.NoError(tb, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// oneCommit is a repository on main with one commit.
func oneCommit(tb testing.TB) string {
	tb.Helper()
	root := tb.TempDir()
	GitSetup(tb, root, "init", "--quiet", "--initial-branch=main")
	require.NoError(tb, os.WriteFile(filepath.Join(root, "README.md"), []byte("hi\n"), 0o644))
	GitSetup(tb, root, "add", "--all")
	GitSetup(tb, root, "commit", "--quiet", "--message=first")
	return root
}

// TestReadCheckoutAgreesWithTheTwoProcessReading: the one-process reading
// gives what the two-process one does, for a branch, a detached HEAD, a
// branch a tag shares its name with, and a clone without a commit (where
// it falls back to the two).
func TestReadCheckoutAgreesWithTheTwoProcessReading(t *testing.T) {
	t.Parallel()
	root := oneCommit(t)
	head := GitSetup(t, root, "rev-parse", "HEAD")
	GitSetup(t, root, "tag", "v1")
	GitSetup(t, root, "tag", "shared")
	GitSetup(t, root, "branch", "shared")
	empty := t.TempDir()
	GitSetup(t, empty, "init", "--quiet", "--initial-branch=trunk")

	p := &Preparer{git: "git"}
	tests := []struct {
		name, from, branch string
		want               Checkout
	}{
		{"the default branch", root, "", Checkout{Branch: "main", Commit: head}},
		{"a tag, detached", root, "v1", Checkout{Commit: head}},
		{"a branch a tag shares its name with", root, "shared", Checkout{Branch: "shared", Commit: head}},
		{"an empty repository", empty, "", Checkout{Branch: "trunk"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clone := filepath.Join(t.TempDir(), "c")
			args := []string{"clone", "--quiet"}
			if tt.branch != "" {
				args = append(args, "--branch="+tt.branch)
			}
			GitSetup(t, t.TempDir(), append(args, tt.from, clone)...)
			got, perr := p.readCheckout(context.Background(), 1, clone)
			require.Nil(t, perr)
			require.Equal(t, tt.want, got)
			byParts, perr := p.readCheckoutByParts(context.Background(), 1, clone)
			require.Nil(t, perr)
			require.Equal(t, tt.want, byParts)
		})
	}
}

// BenchmarkReadCheckout reads a fresh clone's commit and branch in one git
// process and in two, alternately, so the machine's noise lands on both
// (docs/benchmarks.md, issue 21).
func BenchmarkReadCheckout(b *testing.B) {
	root := oneCommit(b)
	clone := filepath.Join(b.TempDir(), "c")
	GitSetup(b, b.TempDir(), "clone", "--quiet", root, clone)
	p := &Preparer{git: "git"}
	for _, name := range []string{"one process", "two processes", "one process ", "two processes "} {
		read := p.readCheckout
		if strings.HasPrefix(name, "two") {
			read = p.readCheckoutByParts
		}
		b.Run(strings.TrimSpace(name), func(b *testing.B) {
			for b.Loop() {
				if _, perr := read(context.Background(), 1, clone); perr != nil {
					b.Fatal(perr)
				}
			}
		})
	}
}
