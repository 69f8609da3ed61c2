package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	runnerAgent "github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// TestPRCreateIsWhatTheRunnerRecords: pr-create prints a Bash call of
// `gh pr create` and its result with the URL alone on the last line; the
// runner's parser and rule read exactly that pull request from it, and
// nothing from a line that merely says an address.
func TestPRCreateIsWhatTheRunnerRecords(t *testing.T) {
	t.Parallel()
	r := startAgent(t, "@demo pr-create https://github.com/acme/app/pull/7\n@demo say see https://github.com/acme/app/pull/8", runOpts{})
	require.Equal(t, 0, r.wait(t).Code)
	rt := runnerAgent.NewDemo(runnerAgent.DemoOptions{})
	var calls domain.PullRequestCalls
	var recorded []rules.PullRequestRef
	for _, o := range r.lines() {
		b, err := json.Marshal(o)
		require.NoError(t, err)
		ev := rt.ParseLine(string(b))
		for _, c := range ev.ToolCalls {
			require.Equal(t, "Bash", c.Name)
			calls.Called(c.ID, c.Name, c.Input)
		}
		for _, res := range ev.ToolResults {
			recorded = append(recorded, calls.Returned(res.ToolUseID, res.Text, res.IsError)...)
		}
	}
	require.Equal(t, []rules.PullRequestRef{{Owner: "acme", Repo: "app", Number: 7}}, recorded)
}
