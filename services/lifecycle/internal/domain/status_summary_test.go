package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

func TestAForkTakesItsSourcesWorkingPlaceButNotItsGoal(t *testing.T) {
	t.Parallel()
	src := session(domain.StatusNeedsInput)
	src.ID, src.Goal, src.GitRoot, src.Branch, src.AgentRuntime = 12, "open a PR", "/repo", "main", "demo"
	n, markers, err := domain.NewStatusSummaryFork(src, "summarise this", 345)
	require.NoError(t, err)
	require.Empty(t, n.Goal, "the spec's prepare_fork strips the goal")
	require.Nil(t, n.ParentSessionID, "a fork is nobody's child")
	require.Equal(t, "/repo", n.GitRoot)
	require.Equal(t, "main", n.Branch)
	require.Equal(t, "demo", n.AgentRuntime)
	require.Equal(t, "Status summary of session #12", n.Title)
	require.Equal(t, []string{rules.ToolGroupSelfSession}, n.MCPToolGroups)
	require.NoError(t, n.Validate())
	require.Equal(t, map[string]any{rules.StatusSummaryForkKey: true, rules.StatusSummarySourceKey: int64(12),
		rules.StatusSummaryCoversKey: int64(345)}, markers)

	fork := session(domain.StatusWaiting)
	fork.ID, fork.CustomMetadata = 13, markers
	got, ok := fork.ForkOf()
	require.True(t, ok)
	require.Equal(t, domain.StatusSummaryFork{SourceID: 12, Covers: 345}, got)
	// As read back from the jsonb column.
	fork.CustomMetadata = map[string]any{rules.StatusSummaryForkKey: true, rules.StatusSummarySourceKey: float64(12), rules.StatusSummaryCoversKey: float64(345)}
	got, ok = fork.ForkOf()
	require.True(t, ok)
	require.Equal(t, domain.StatusSummaryFork{SourceID: 12, Covers: 345}, got)

	_, _, err = domain.NewStatusSummaryFork(fork, "summarise this", 1)
	require.ErrorContains(t, err, "a fork is never summarised")
	_, _, err = domain.NewStatusSummaryFork(src, " ", 1)
	require.ErrorContains(t, err, "prompt")
	_, _, err = domain.NewStatusSummaryFork(withStatus(src, domain.StatusArchived), "x", 1)
	require.ErrorContains(t, err, "archived")
}

func TestNoCallerMaySetOrRemoveAForksMarkers(t *testing.T) {
	t.Parallel()
	for _, key := range []string{rules.StatusSummaryForkKey, rules.StatusSummarySourceKey, "status_summary_anything"} {
		n := domain.NewSession{GitRoot: "/repo", CustomMetadata: map[string]any{"team": "a", key: true}}
		err := n.Validate()
		require.ErrorContains(t, err, "is Zimmer's own", key)
		require.ErrorContains(t, err, key)
		p := domain.Patch{CustomMetadata: map[string]any{key: nil}}
		require.ErrorContains(t, p.Validate(), "cannot be set or removed by a caller", key)
	}
	require.NoError(t, domain.NewSession{GitRoot: "/repo", CustomMetadata: map[string]any{"status": "x", "summary_status_fork": true}}.Validate())
}

func TestAHarvestWritesTheSummaryOrTheFailureOnce(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	src := session(domain.StatusNeedsInput)
	src.ID = 12

	h := domain.HarvestStatusSummary(src, domain.StatusSummaryFork{SourceID: 12, Covers: 40}, 13, "  All tests pass; PR next.  ", "", now)
	require.True(t, h.Changed)
	require.Equal(t, &domain.StatusSummary{Text: "All tests pass; PR next.", GeneratedAt: now, TranscriptPosition: 40, ForkSessionID: 13},
		h.Source.Markers.StatusSummary)
	require.Equal(t, "[Status summary] written by fork #13, covering the transcript to line 40", h.Timeline[0].Message)

	again := domain.HarvestStatusSummary(h.Source, domain.StatusSummaryFork{SourceID: 12, Covers: 40}, 13, "other", "", now.Add(time.Minute))
	require.False(t, again.Changed, "a retried harvest writes nothing")

	// A failing fork keeps the summary there is and says why.
	failed := domain.HarvestStatusSummary(h.Source, domain.StatusSummaryFork{SourceID: 12, Covers: 90}, 14, "", "exited with code 1", now.Add(time.Hour))
	require.True(t, failed.Changed)
	got := failed.Source.Markers.StatusSummary
	require.Equal(t, "All tests pass; PR next.", got.Text)
	require.Equal(t, int64(40), got.TranscriptPosition, "the position stays the summary's, so the next pause asks again")
	require.Equal(t, &domain.StatusSummaryFailure{Reason: "exited with code 1", FailedAt: now.Add(time.Hour), ForkSessionID: 14, TranscriptPosition: 90}, got.Failure)
	require.Equal(t, domain.TimelineWarning, failed.Timeline[0].Kind)
	require.Contains(t, failed.Timeline[0].Message, "fork #14 failed, so the summary of transcript line 40 stands: exited with code 1")

	// A blank summary is a failure; the next success clears the failure.
	blank := domain.HarvestStatusSummary(src, domain.StatusSummaryFork{SourceID: 12, Covers: 5}, 15, " ", "", now)
	require.Equal(t, domain.NoSummaryWritten, blank.Source.Markers.StatusSummary.Failure.Reason)
	require.Empty(t, blank.Source.Markers.StatusSummary.Text)
	ok := domain.HarvestStatusSummary(failed.Source, domain.StatusSummaryFork{SourceID: 12, Covers: 95}, 16, "done", "", now)
	require.Nil(t, ok.Source.Markers.StatusSummary.Failure)

	// An older fork's summary never replaces a newer one.
	stale := domain.HarvestStatusSummary(ok.Source, domain.StatusSummaryFork{SourceID: 12, Covers: 10}, 17, "old", "", now)
	require.False(t, stale.Changed)

	long := domain.HarvestStatusSummary(src, domain.StatusSummaryFork{SourceID: 12, Covers: 1}, 18, strings.Repeat("x", rules.MaxStatusSummaryChars+10), "", now)
	require.Len(t, []rune(long.Source.Markers.StatusSummary.Text), rules.MaxStatusSummaryChars)
}
