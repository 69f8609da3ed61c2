package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
)

// TestCostsRecordOnceAndSumByDaySessionAndKind: an entry recorded again
// (a retried activity, concurrently even) counts once; a report sums the
// range's entries by day, session, kind and MCP tool, and filters by
// session; an empty range is a zero total.
func TestCostsRecordOnceAndSumByDaySessionAndKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.NewCosts(pgtest.DB(t, store.Migrations))
	day1 := time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC)
	day2 := time.Date(2026, 12, 2, 0, 30, 0, 0, time.UTC)

	prompt := domain.PromptCosts(1, "t1", map[string]int{"turn_text": 100, "session_hierarchy": 40, "human_messages": 60}, false)
	usage := domain.UsageCost(1, "t1", domain.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 3, CacheCreationTokens: 2, CostUSD: 0.5}, false)
	entries := append(prompt, usage)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.Record(ctx, day1, entries...) }()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	mcp, err := domain.MCPResponseCost(2, "get_session", 700, "call-1")
	require.NoError(t, err)
	prov, err := domain.MCPResponseCost(2, domain.ProvenanceTool, 300, "call-2")
	require.NoError(t, err)
	require.NoError(t, s.Record(ctx, day2, mcp, prov, mcp)) // the retried report counts once
	require.NoError(t, s.Record(ctx, day2, domain.InferenceCost(1, "run", 1, 50, domain.Usage{InputTokens: 7, CostUSD: 0.25})))

	q, err := domain.ParseCostQuery("2026-12-01", "2026-12-02", "", day2)
	require.NoError(t, err)
	r, err := s.Report(ctx, q)
	require.NoError(t, err)
	require.Equal(t, domain.CostLine{Bytes: 1250, Usage: domain.Usage{InputTokens: 17, OutputTokens: 5, CacheReadTokens: 3, CacheCreationTokens: 2, CostUSD: 0.75}, Entries: 7}, r.Total)
	require.Equal(t, []domain.CostLine{
		{Day: "2026-12-01", Bytes: 200, Usage: domain.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 3, CacheCreationTokens: 2, CostUSD: 0.5}, Entries: 4},
		{Day: "2026-12-02", Bytes: 1050, Usage: domain.Usage{InputTokens: 7, CostUSD: 0.25}, Entries: 3},
	}, r.ByDay)
	require.Equal(t, []int64{1, 2}, []int64{r.BySession[0].SessionID, r.BySession[1].SessionID})
	require.Equal(t, int64(250), r.BySession[0].Bytes)
	require.Equal(t, int64(1000), r.BySession[1].Bytes)
	kinds := map[domain.CostKind]int64{}
	var order []domain.CostKind
	for _, l := range r.ByKind {
		kinds[l.Kind] = l.Bytes
		order = append(order, l.Kind)
	}
	require.Equal(t, []domain.CostKind{domain.CostTurnText, domain.CostSessionHierarchy, domain.CostHumanMessages, domain.CostMCPResponses,
		domain.CostProvenanceTool, domain.CostRuntime, domain.CostInference}, order, "in the order a report shows them")
	if diff := cmp.Diff(map[domain.CostKind]int64{
		domain.CostTurnText: 100, domain.CostSessionHierarchy: 40, domain.CostHumanMessages: 60, domain.CostRuntime: 0,
		domain.CostMCPResponses: 700, domain.CostProvenanceTool: 300, domain.CostInference: 50,
	}, kinds); diff != "" {
		t.Fatalf("by kind (-want +got):\n%s", diff)
	}
	require.Equal(t, []domain.CostLine{
		{Kind: domain.CostMCPResponses, Tool: "get_session", Bytes: 700, Entries: 1},
		{Kind: domain.CostProvenanceTool, Tool: domain.ProvenanceTool, Bytes: 300, Entries: 1},
	}, r.ByTool)

	// One session, one day.
	q, err = domain.ParseCostQuery("2026-12-02", "2026-12-02", "2", day2)
	require.NoError(t, err)
	r, err = s.Report(ctx, q)
	require.NoError(t, err)
	require.Equal(t, int64(1000), r.Total.Bytes)
	require.Len(t, r.BySession, 1)

	// Nothing in range: a zero total, no lines.
	q, err = domain.ParseCostQuery("2026-11-01", "2026-11-02", "", day2)
	require.NoError(t, err)
	r, err = s.Report(ctx, q)
	require.NoError(t, err)
	require.Equal(t, domain.CostLine{}, r.Total)
	require.Empty(t, r.ByDay)
}

// A session id past 32 bits (every int64 is an id a caller may give)
// filters like any other: the query's parameter is a bigint, never
// inferred as an integer that overflows (an Internal answer, found by the
// e2e fuzz of get_costs).
func TestCostsOfASessionIDPast32Bits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.NewCosts(pgtest.DB(t, store.Migrations))
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const big = int64(1) << 40
	require.NoError(t, s.Record(ctx, at, domain.PromptCosts(big, "t1", map[string]int{"turn_text": 10}, false)...))
	for id, want := range map[string]int64{"9223372036854775807": 0, "1099511627776": 10} {
		q, err := domain.ParseCostQuery("2026-12-01", "2026-12-01", id, at)
		require.NoError(t, err)
		r, err := s.Report(ctx, q)
		require.NoError(t, err, "session %s", id)
		require.Equal(t, want, r.Total.Bytes, "session %s", id)
	}
}
