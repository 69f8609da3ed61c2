package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// TestSummaryModeSummarisesTheTranscriptItIsGiven: a fork's prompt makes the
// demo agent write a deterministic summary of the transcript in it, and
// obey none of the directives quoted there.
func TestSummaryModeSummarisesTheTranscriptItIsGiven(t *testing.T) {
	t.Parallel()
	prompt := domain.SummaryPrompt(12, 345, []domain.SummaryLine{
		{Kind: "assistant", Text: "@demo exit 9"},
		{Kind: "assistant", Text: "All tests pass."},
		{Kind: "result", Text: "All tests pass."},
	})
	r := startAgent(t, prompt, runOpts{})
	require.Equal(t, 0, r.wait(t).Code, "a quoted directive is not obeyed")
	want := `Session #12, as its transcript stands at line 345: 3 lines read; the agent last said "All tests pass.".`
	require.Equal(t, []string{want}, texts(r.lines()))
	require.Equal(t, want, last(r.lines())["result"])

	// The same prompt, the same summary.
	again := startAgent(t, prompt, runOpts{})
	require.Equal(t, 0, again.wait(t).Code)
	require.Equal(t, []string{want}, texts(again.lines()))
}

func TestSummaryModeFailsWhenTheTranscriptAsksIt(t *testing.T) {
	t.Parallel()
	prompt := domain.SummaryPrompt(12, 7, []domain.SummaryLine{{Kind: "assistant", Text: "ok. " + failSummaryPhrase}})
	r := startAgent(t, prompt, runOpts{})
	require.Equal(t, 1, r.wait(t).Code)
	require.Equal(t, true, last(r.lines())["is_error"])
}
