package workflow_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/prompt"
)

// fakeCosts keeps what was recorded, each key once (as store.Costs).
type fakeCosts struct {
	mu      sync.Mutex
	entries map[string]domain.CostEntry
}

func (f *fakeCosts) Record(_ context.Context, _ time.Time, entries ...domain.CostEntry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.entries == nil {
		f.entries = map[string]domain.CostEntry{}
	}
	for _, e := range entries {
		if _, ok := f.entries[e.Key]; !ok {
			f.entries[e.Key] = e
		}
	}
	return nil
}

func (f *fakeCosts) byKind() map[domain.CostKind]domain.CostEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[domain.CostKind]domain.CostEntry{}
	for _, e := range f.entries {
		out[e.Kind] = e
	}
	return out
}

// demoUsage is what the demo agent reports every turn.
var demoUsage = domain.Usage{InputTokens: 1000, OutputTokens: 100, CacheReadTokens: 500, CacheCreationTokens: 50, CostUSD: 0.0125}

// TestRunTurnRecordsItsCosts: a turn records its prompt's parts in bytes
// (the hierarchy and human messages apart) and its runtime's usage, once
// however often it runs; a status-summary fork's turn is status_summary's.
func TestRunTurnRecordsItsCosts(t *testing.T) {
	t.Parallel()
	f, src := newPromptFixture(t)
	src.blocks.HumanMessages = "<human-messages>\nAuthored in this session: 0.\n</human-messages>\n"
	costs := &fakeCosts{}
	f.acts.Costs = costs
	require.Zero(t, f.run(t, "Fix the bug").ExitCode)

	got := costs.byKind()
	require.Len(t, got, 6, "%v", got)
	require.Equal(t, int64(len("Fix the bug")), got[domain.CostTurnText].Bytes)
	require.Equal(t, int64(39), got[domain.CostGoal].Bytes)
	require.Equal(t, int64(48), got[domain.CostSessionNotes].Bytes)
	require.Equal(t, int64(len(hierarchyBlock)-1), got[domain.CostSessionHierarchy].Bytes)
	require.Equal(t, int64(len("<human-messages>\nAuthored in this session: 0.\n</human-messages>")), got[domain.CostHumanMessages].Bytes)
	require.Equal(t, demoUsage, got[domain.CostRuntime].Usage)
	for _, e := range got {
		require.Equal(t, int64(7), e.SessionID)
		require.Equal(t, "session-7/turn-1", e.TurnID)
	}

	// The same turn again (a retried activity) records nothing new.
	f.lifecycle.minted, f.lifecycle.revoked = nil, nil
	f.run(t, "Fix the bug")
	require.Len(t, costs.byKind(), 6)
}

func TestStatusSummaryForkTurnIsItsOwnKind(t *testing.T) {
	t.Parallel()
	f, src := newPromptFixture(t)
	src.session.StatusSummaryFork = true
	costs := &fakeCosts{}
	f.acts.Costs = costs
	require.Zero(t, f.run(t, "Summarise").ExitCode)
	got := costs.entries
	require.Len(t, got, 2, "%v", got)
	var bytes int64
	var usage domain.Usage
	for _, e := range got {
		require.Equal(t, domain.CostStatusSummary, e.Kind)
		bytes, usage = bytes+e.Bytes, usage.Add(e.Usage)
	}
	require.Equal(t, int64(len("Summarise")+48+len(hierarchyBlock)-1), bytes, "its whole prompt (no goal: a fork's is stripped)")
	require.Equal(t, demoUsage, usage)
}

// Every part the prompt builder counts is a cost kind: a new part would
// otherwise go uncounted.
func TestEveryPromptPartIsACostKind(t *testing.T) {
	t.Parallel()
	for _, p := range prompt.Parts {
		require.Contains(t, domain.CostKinds, domain.CostKind(p))
	}
}
