package domain_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// TestDecideUncleEdge feeds the rules the facts the app reads, one row of
// the rules table each, plus the precedences between rows. A is 1, B is 2.
// The store's TestRecordUncleEdgeRules runs the same rows against graphs in
// Postgres, facts read for real.
func TestDecideUncleEdge(t *testing.T) {
	t.Parallel()

	// unrelated is the graph where nothing stops A → B.
	unrelated := domain.UncleFacts{
		ActingReachesTarget: domain.Unreachable,
		TargetSpawnedActing: domain.Unreachable,
		TargetReachesActing: domain.Unreachable,
	}
	with := func(edit func(*domain.UncleFacts)) domain.UncleFacts {
		f := unrelated
		edit(&f)
		return f
	}
	tests := []struct {
		name          string
		acting        int64
		facts         domain.UncleFacts
		want          domain.UncleOutcome
		deleteInverse bool
		insert        bool
	}{
		{"A is B", 2, unrelated, domain.UncleNothingSelf, false, false},
		{"A is B even when unknown", 2, with(func(f *domain.UncleFacts) { f.Missing = []int64{2} }), domain.UncleNothingSelf, false, false},
		{"A unknown", 1, with(func(f *domain.UncleFacts) { f.Missing = []int64{1} }), domain.UncleRefusedUnknownSession, false, false},
		{"B unknown", 1, with(func(f *domain.UncleFacts) { f.Missing = []int64{2} }), domain.UncleRefusedUnknownSession, false, false},
		{"A already reaches B", 1, with(func(f *domain.UncleFacts) { f.ActingReachesTarget = domain.Reachable }), domain.UncleNothingAlreadyReachable, false, false},
		{
			"A reaching B unknown falls through: the edge may be redundant, never a cycle",
			1, with(func(f *domain.UncleFacts) { f.ActingReachesTarget = domain.ReachUnknown }),
			domain.UncleWritten, false, true,
		},
		{"B spawned A", 1, with(func(f *domain.UncleFacts) { f.TargetSpawnedActing = domain.Reachable }), domain.UncleNothingSpawnAncestor, false, false},
		{
			"B spawned A and is its uncle: the spawn edge wins, nothing is touched",
			1, with(func(f *domain.UncleFacts) {
				f.TargetSpawnedActing, f.TargetIsUncle, f.TargetReachesActing = domain.Reachable, true, domain.Reachable
			}),
			domain.UncleNothingSpawnAncestor, false, false,
		},
		{"B → A exists: inverted", 1, with(func(f *domain.UncleFacts) { f.TargetIsUncle = true }), domain.UncleInverted, true, true},
		{
			"B → A exists but B reaches A by a longer path: refused",
			1, with(func(f *domain.UncleFacts) { f.TargetIsUncle, f.TargetReachesActing = true, domain.Reachable }),
			domain.UncleRefusedSenior, false, false,
		},
		{
			"B → A exists but the longer path cannot be ruled out: refused",
			1, with(func(f *domain.UncleFacts) { f.TargetIsUncle, f.TargetReachesActing = true, domain.ReachUnknown }),
			domain.UncleRefusedBudgetExhausted, false, false,
		},
		{"B senior two or more hops away", 1, with(func(f *domain.UncleFacts) { f.TargetReachesActing = domain.Reachable }), domain.UncleRefusedSenior, false, false},
		{"B senior not ruled out", 1, with(func(f *domain.UncleFacts) { f.TargetReachesActing = domain.ReachUnknown }), domain.UncleRefusedBudgetExhausted, false, false},
		{"unrelated", 1, unrelated, domain.UncleWritten, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := domain.UncleEdge{UncleSessionID: tt.acting, SessionID: 2, EntryPoint: "mcp.action_session.follow_up"}
			d := domain.DecideUncleEdge(e, tt.facts)
			require.Equal(t, tt.want, d.Outcome, d.Message)
			require.NotEmpty(t, d.Message)
			require.Equal(t, tt.deleteInverse, d.DeleteInverse, "delete B → A")
			require.Equal(t, tt.insert, d.Insert, "insert A → B")
		})
	}
}

// TestDecideUncleEdgeWritesOnlyAfterACompleteSearch is the acyclicity
// invariant over every combination of facts: A → B is inserted only when a
// complete search found that B cannot reach A other than by the edge being
// inverted, and the inverse is deleted only together with that insert.
func TestDecideUncleEdgeWritesOnlyAfterACompleteSearch(t *testing.T) {
	t.Parallel()
	reaches := []domain.Reach{domain.Unreachable, domain.Reachable, domain.ReachUnknown}
	for _, acting := range []int64{1, 2} {
		for _, missing := range [][]int64{nil, {1}, {2}, {1, 2}} {
			for _, down := range reaches {
				for _, spawned := range reaches {
					for _, up := range reaches {
						for _, inverse := range []bool{false, true} {
							f := domain.UncleFacts{
								Missing: missing, ActingReachesTarget: down, TargetSpawnedActing: spawned,
								TargetIsUncle: inverse, TargetReachesActing: up,
							}
							e := domain.UncleEdge{UncleSessionID: acting, SessionID: 2, EntryPoint: "x"}
							d := domain.DecideUncleEdge(e, f)
							name := fmt.Sprintf("acting %d, %+v", acting, f)
							if d.Insert {
								require.Equal(t, domain.Unreachable, up, name)
								require.Empty(t, missing, name)
								require.NotEqual(t, e.UncleSessionID, e.SessionID, name)
							}
							require.False(t, d.DeleteInverse && !d.Insert, "deleted without inserting: %s", name)
							require.Equal(t, d.DeleteInverse, d.Insert && inverse, name)
							require.Equal(t, d.Insert, d.Outcome == domain.UncleWritten || d.Outcome == domain.UncleInverted, name)
						}
					}
				}
			}
		}
	}
}
