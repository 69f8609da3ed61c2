package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// TestUncleEdgeChangedLines: an edge written and an inversion each give
// both sessions the same sentence naming both by #id and the entry point
// (issue 23 rule 19), an inversion the old edge and the new;
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
			"[Lineage] Uncle edge recorded: session #7 is now an uncle of session #9 (session #7 queued or interrupted session #9 via mcp.action_session.follow_up)",
			"[Lineage] Uncle edge recorded: session #7 is now an uncle of session #9 (session #7 queued or interrupted session #9 via mcp.action_session.follow_up)",
		},
		{
			domain.UncleInverted,
			"[Lineage] Uncle edge inverted: #9 → #7 replaced by #7 → #9 (session #7 queued or interrupted session #9 via mcp.action_session.follow_up, so it is now the senior)",
			"[Lineage] Uncle edge inverted: #9 → #7 replaced by #7 → #9 (session #7 queued or interrupted session #9 via mcp.action_session.follow_up, so it is now the senior)",
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
