package rules_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// TestBranchProblemIsGitsRefRule: every name BranchProblem accepts, git
// accepts as a branch name, and every one it refuses, git refuses too
// (git check-ref-format --branch), so the rule is git's, not a guess.
// ("@" is left out: --branch reads it as HEAD's branch, and
// BranchProblem refuses it, as git's ref rule does.)
func TestBranchProblemIsGitsRefRule(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not on PATH")
	}
	for _, name := range []string{
		"main", "release/1.2", "feature/x-y_z", "v1", "é-branch", "a.b", "x@y",
		"-b", "--upload-pack=touch /tmp/owned", "a..b", "a b", "a\tb", "a~1", "a^", "a:b", "a?", "a*", "a[", `a\b`,
		"a@{1}", "/a", "a/", "a//b", "a.", ".a", "a/.b", "a.lock", "a/b.lock/c",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			gitSays := exec.Command(git, "check-ref-format", "--branch", name).Run() == nil
			problem := rules.BranchProblem(name)
			require.Equal(t, gitSays, problem == "", "git accepts it: %v; BranchProblem: %q", gitSays, problem)
		})
	}
}

func TestSubdirectoryProblem(t *testing.T) {
	t.Parallel()
	for sub, ok := range map[string]bool{
		"": true, ".": true, "services/api": true, "a/../b": true, "./x": true, ".github/workflows": true,
		"..": false, "../../..": false, "a/../../b": false, "/etc": false, `\etc`: false, `a\..\..`: false,
		".git": false, "./.git/hooks": false, "a\x01": false,
	} {
		require.Equal(t, ok, rules.SubdirectoryProblem(sub) == "", "%q: %s", sub, rules.SubdirectoryProblem(sub))
	}
}

func TestAgentRuntimeProblem(t *testing.T) {
	t.Parallel()
	require.Empty(t, rules.AgentRuntimeProblem(""), "the runner's default")
	for _, name := range rules.AgentRuntimes() {
		require.Empty(t, rules.AgentRuntimeProblem(name))
	}
	require.Contains(t, rules.AgentRuntimeProblem("../../bin/sh"), "use one of claude_code, codex, command, demo")
}
