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

// gitSetup runs git for a test's own setup: a fixed identity, no user or
// system config.
func gitSetup(tb testing.TB, dir string, args ...string) string {
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

// TestReadCheckoutAgreesWithTheTwoProcessReading: the one-process reading
// gives what the two-process one does, for a branch, a detached HEAD, a
// branch a tag shares its name with, and a clone without a commit (where
// it falls back to the two).
func TestReadCheckoutAgreesWithTheTwoProcessReading(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	gitSetup(t, root, "init", "--quiet", "--initial-branch=main")
	require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), []byte("hi\n"), 0o644))
	gitSetup(t, root, "add", "--all")
	gitSetup(t, root, "commit", "--quiet", "--message=first")
	head := gitSetup(t, root, "rev-parse", "HEAD")
	gitSetup(t, root, "tag", "v1")
	gitSetup(t, root, "tag", "shared")
	gitSetup(t, root, "branch", "shared")
	empty := t.TempDir()
	gitSetup(t, empty, "init", "--quiet", "--initial-branch=trunk")

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
			gitSetup(t, t.TempDir(), append(args, tt.from, clone)...)
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
	root := b.TempDir()
	gitSetup(b, root, "init", "--quiet", "--initial-branch=main")
	require.NoError(b, os.WriteFile(filepath.Join(root, "README.md"), []byte("hi\n"), 0o644))
	gitSetup(b, root, "add", "--all")
	gitSetup(b, root, "commit", "--quiet", "--message=first")
	clone := filepath.Join(b.TempDir(), "c")
	gitSetup(b, b.TempDir(), "clone", "--quiet", root, clone)
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
