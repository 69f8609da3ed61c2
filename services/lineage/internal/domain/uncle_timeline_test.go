package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// TestUncleEdgeChangedLines: an edge written and an inversion each give
// both sessions a sentence naming the other session and the entry point;
// every outcome that changes nothing gives neither a line.
func TestUncleEdgeChangedLines(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := domain.UncleEdge{UncleSessionID: 7, SessionID: 9, EntryPoint: "mcp.action_session.follow_up"}

	tests := []struct {
		outcome        domain.UncleOutcome
		acting, target string
	}{
		{
			domain.UncleWritten,
			"[Lineage] This session is now an uncle of session #9: it queued or interrupted that session via mcp.action_session.follow_up",
			"[Lineage] Session #7 is now an uncle of this session: it queued or interrupted this session via mcp.action_session.follow_up",
		},
		{
			domain.UncleInverted,
			"[Lineage] Seniority inverted: this session queued or interrupted session #9 via mcp.action_session.follow_up and is now its uncle (uncle edge #9 → #7 replaced by #7 → #9)",
			"[Lineage] Seniority inverted: session #7 queued or interrupted this session via mcp.action_session.follow_up and is now its uncle (uncle edge #9 → #7 replaced by #7 → #9)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.outcome.String(), func(t *testing.T) {
			t.Parallel()
			got, ok := domain.UncleDecision{Outcome: tt.outcome}.Changed(e, at)
			require.True(t, ok)
			require.Equal(t, domain.UncleEdgeChanged{Edge: e, Outcome: tt.outcome, At: at, Lines: []domain.TimelineLine{
				{SessionID: 7, Message: tt.acting},
				{SessionID: 9, Message: tt.target},
			}}, got)
		})
	}

	// The call's principal is named on both lines, after the sentence.
	by := e
	by.RecordedBy = "session #7's credential"
	got, ok := domain.UncleDecision{Outcome: domain.UncleWritten}.Changed(by, at)
	require.True(t, ok)
	require.Equal(t, tests[0].acting+" (by session #7's credential)", got.Lines[0].Message)
	require.Equal(t, tests[0].target+" (by session #7's credential)", got.Lines[1].Message)

	for _, o := range []domain.UncleOutcome{
		domain.UncleNothingSelf, domain.UncleNothingAlreadyReachable, domain.UncleNothingSpawnAncestor,
		domain.UncleRefusedSenior, domain.UncleRefusedUnknownSession, domain.UncleRefusedBudgetExhausted,
	} {
		_, ok := domain.UncleDecision{Outcome: o}.Changed(e, at)
		require.False(t, ok, "%s changes nothing, so it writes no line", o)
	}
}
