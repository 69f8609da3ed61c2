package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

func TestParseCostQuery(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	day := func(s string) time.Time { d, _ := time.Parse("2006-01-02", s); return d }
	for _, tc := range []struct {
		from, to, session string
		want              domain.CostQuery
		err               string
	}{
		{"", "", "", domain.CostQuery{From: day("2026-11-03"), To: day("2026-12-02")}, ""},
		{"2026-12-01", "", "7", domain.CostQuery{From: day("2026-12-01"), To: day("2026-12-02"), SessionID: 7}, ""},
		{"", "2026-06-30", "", domain.CostQuery{From: day("2026-06-01"), To: day("2026-06-30")}, ""},
		{"2025-12-02", "2026-12-02", "", domain.CostQuery{From: day("2025-12-02"), To: day("2026-12-02")}, ""},
		{"2025-12-01", "2026-12-02", "", domain.CostQuery{}, "to: must be at most 366 days after from"},
		{"12/01/2026", "", "", domain.CostQuery{}, `from: must be a day written YYYY-MM-DD (UTC), like 2026-12-02; got "12/01/2026"`},
		{"", "2026-02-30", "", domain.CostQuery{}, `to: must be a day written YYYY-MM-DD`},
		{"2026-12-03", "2026-12-02", "", domain.CostQuery{}, "from: must not be after to (2026-12-02); got 2026-12-03"},
		{"", "", "0", domain.CostQuery{}, `session_id: must be a session's numeric id`},
		{"", "", "slug", domain.CostQuery{}, `session_id: must be a session's numeric id`},
	} {
		got, err := domain.ParseCostQuery(tc.from, tc.to, tc.session, now)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, "%+v", tc)
			continue
		}
		require.NoError(t, err, "%+v", tc)
		require.Equal(t, tc.want, got, "%+v", tc)
	}
	q, _ := domain.ParseCostQuery("2026-12-01", "2026-12-01", "", now)
	require.Equal(t, day("2026-12-02"), q.End(), "to is included: the range ends at the next midnight")
}

func TestCostEntries(t *testing.T) {
	t.Parallel()
	require.Equal(t, domain.CostProvenanceTool, domain.MCPCostKind("get_session_provenance"))
	require.Equal(t, domain.CostMCPResponses, domain.MCPCostKind("get_session"))

	_, err := domain.MCPResponseCost(0, " ", -1, "")
	require.ErrorContains(t, err, "session_id: must be the calling session's numeric id, got 0")
	require.ErrorContains(t, err, "tool: must name the MCP tool")
	require.ErrorContains(t, err, "bytes: must be the response's size in bytes, 0 or more, got -1")
	require.ErrorContains(t, err, "call_id: must name the call")

	parts := domain.PromptCosts(3, "t", map[string]int{"turn_text": 5, "human_messages": 7}, false)
	require.Equal(t, []domain.CostEntry{
		{Key: "turn/t/turn_text", SessionID: 3, TurnID: "t", Kind: domain.CostTurnText, Bytes: 5},
		{Key: "turn/t/human_messages", SessionID: 3, TurnID: "t", Kind: domain.CostHumanMessages, Bytes: 7},
	}, parts)
	fork := domain.PromptCosts(3, "t", map[string]int{"turn_text": 5, "session_notes": 7}, true)
	require.Equal(t, []domain.CostEntry{{Key: "turn/t/status_summary/prompt", SessionID: 3, TurnID: "t", Kind: domain.CostStatusSummary, Bytes: 12}}, fork)
	require.Equal(t, domain.CostStatusSummary, domain.UsageCost(3, "t", domain.Usage{}, true).Kind)
	require.NotEqual(t, fork[0].Key, domain.UsageCost(3, "t", domain.Usage{}, true).Key, "a fork's prompt and usage are two entries")
}
