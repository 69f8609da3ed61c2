package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

func TestASummaryIsNeededOnlyWhenTheTranscriptMoved(t *testing.T) {
	t.Parallel()
	require.True(t, domain.SummaryNeeded(41, 40))
	require.True(t, domain.SummaryNeeded(1, 0), "no summary yet")
	require.False(t, domain.SummaryNeeded(40, 40), "nothing new since")
	require.False(t, domain.SummaryNeeded(0, 0), "no transcript at all")
}

// TestTheForksPromptReadsBack: the prompt the runner gives a fork is what
// the demo runtime's summary mode reads, in one format.
func TestTheForksPromptReadsBack(t *testing.T) {
	t.Parallel()
	lines := []domain.SummaryLine{
		{Kind: "system", Text: "init"},
		{Kind: "assistant", Text: "I ran the tests.\nAll pass."},
		{Kind: "tool", Text: ""},
		{Kind: "result", Text: "boom", IsError: true},
	}
	prompt := domain.SummaryPrompt(12, 345, lines)
	require.Contains(t, prompt, "session #12")
	require.Contains(t, prompt, "Change no file")
	req, ok := domain.ParseSummaryPrompt(prompt)
	require.True(t, ok)
	require.Equal(t, domain.SummaryRequest{SourceID: 12, Position: 345, Lines: []string{
		"[system] init", "[assistant] I ran the tests. All pass.", "[result error] boom",
	}}, req)

	_, ok = domain.ParseSummaryPrompt("@demo say hello")
	require.False(t, ok)
	_, ok = domain.ParseSummaryPrompt(`<status-summary-request session="1" transcript-position="2">` + "\nno transcript")
	require.False(t, ok)
}

func TestTheExcerptKeepsTheNewestLinesWithinItsBounds(t *testing.T) {
	t.Parallel()
	var lines []domain.SummaryLine
	for i := range domain.SummaryMaxLines + 50 {
		lines = append(lines, domain.SummaryLine{Kind: "assistant", Text: strings.Repeat("x", 10) + string(rune('a'+i%26))})
	}
	lines = append(lines, domain.SummaryLine{Kind: "assistant", Text: strings.Repeat("y", domain.SummaryMaxLineRunes+100)})
	got := domain.SummaryExcerpt(lines)
	require.Len(t, got, domain.SummaryMaxLines)
	require.True(t, strings.HasSuffix(got[len(got)-1], "…"), "the newest line is last, cut")
	require.Len(t, []rune(got[len(got)-1]), len("[assistant] ")+domain.SummaryMaxLineRunes+1)

	var big []domain.SummaryLine
	for range 150 {
		big = append(big, domain.SummaryLine{Kind: "tool", Text: strings.Repeat("z", domain.SummaryMaxLineRunes)})
	}
	total := 0
	for _, l := range domain.SummaryExcerpt(big) {
		total += len(l) + 1
	}
	require.LessOrEqual(t, total, domain.SummaryMaxBytes)
}

func TestWhatAForkWroteIsItsResultElseItsLastMessage(t *testing.T) {
	t.Parallel()
	require.Equal(t, "the summary", domain.ForkSummary([]domain.SummaryLine{
		{Kind: "assistant", Text: "thinking"}, {Kind: "assistant", Text: "draft"}, {Kind: "result", Text: " the summary "},
	}))
	require.Equal(t, "draft", domain.ForkSummary([]domain.SummaryLine{
		{Kind: "assistant", Text: "thinking"}, {Kind: "assistant", Text: "draft"}, {Kind: "result", Text: ""},
	}))
	require.Empty(t, domain.ForkSummary([]domain.SummaryLine{{Kind: "assistant", Text: "x"}, {Kind: "result", Text: "failed", IsError: true}}),
		"an error result wrote no summary")
	require.Empty(t, domain.ForkSummary(nil))
}
