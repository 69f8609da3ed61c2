package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// TestDecideUncleRetraction feeds the retraction rules the facts the app
// reads, one row of the rules each, plus the precedences between rows. A
// is 1, B is 2. The store's retraction tests run the same rows against
// graphs in Postgres.
func TestDecideUncleRetraction(t *testing.T) {
	t.Parallel()

	// inversion is the graph where an inversion undoes cleanly.
	inversion := domain.RetractionFacts{Present: true, ReplacedInverse: true, ActingReachesTargetOtherwise: domain.Unreachable}
	with := func(edit func(*domain.RetractionFacts)) domain.RetractionFacts {
		f := inversion
		edit(&f)
		return f
	}
	type row struct {
		name     string
		recorded domain.UncleOutcome
		facts    domain.RetractionFacts
		want     domain.RetractionOutcome
		delete   bool
		restore  bool
	}
	tests := []row{
		{"written: deleted", domain.UncleWritten, inversion, domain.RetractDeleted, true, false},
		{"written, whatever else the graph says: deleted, nothing restored", domain.UncleWritten,
			with(func(f *domain.RetractionFacts) { f.ActingReachesTargetOtherwise = domain.Reachable }), domain.RetractDeleted, true, false},
		{"written, edge gone", domain.UncleWritten, with(func(f *domain.RetractionFacts) { f.Present = false }), domain.RetractNothingThere, false, false},
		{"inverted: restored", domain.UncleInverted, inversion, domain.RetractRestored, true, true},
		{"inverted, edge gone", domain.UncleInverted, with(func(f *domain.RetractionFacts) { f.Present = false }), domain.RetractNothingThere, false, false},
		{"inverted, A still reaches B: deleted, not restored", domain.UncleInverted,
			with(func(f *domain.RetractionFacts) { f.ActingReachesTargetOtherwise = domain.Reachable }), domain.RetractDeletedNotRestored, true, false},
		{"inverted, search out of budget: deleted, not restored", domain.UncleInverted,
			with(func(f *domain.RetractionFacts) { f.ActingReachesTargetOtherwise = domain.ReachUnknown }), domain.RetractDeletedNotRestored, true, false},
		{"inverted, the edge keeps nothing it replaced: deleted, not restored", domain.UncleInverted,
			with(func(f *domain.RetractionFacts) { f.ReplacedInverse = false }), domain.RetractDeletedNotRestored, true, false},
	}
	for _, o := range []domain.UncleOutcome{
		domain.UncleNothingSelf, domain.UncleNothingAlreadyReachable, domain.UncleNothingSpawnAncestor,
		domain.UncleRefusedSenior, domain.UncleRefusedUnknownSession, domain.UncleRefusedBudgetExhausted,
	} {
		tests = append(tests, row{o.String() + " changed nothing, even with A → B present", o, inversion, domain.RetractNothingRecorded, false, false})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := domain.UncleRetraction{Edge: domain.UncleEdge{UncleSessionID: 1, SessionID: 2, EntryPoint: "rest.follow_up"}, Recorded: tt.recorded}
			d := domain.DecideUncleRetraction(r, tt.facts)
			require.Equal(t, tt.want, d.Outcome)
			require.Equal(t, tt.delete, d.Delete, "delete")
			require.Equal(t, tt.restore, d.Restore, "restore")
			require.Equal(t, tt.delete, d.Retracted())
			require.NotEmpty(t, d.Message)
			require.Equal(t, tt.want == domain.RetractDeletedNotRestored, d.NotRestoredBecause != "", "a reason exactly when not restored")
		})
	}
}

func TestUncleRetractionValidate(t *testing.T) {
	t.Parallel()
	valid := domain.UncleRetraction{Edge: domain.UncleEdge{UncleSessionID: 1, SessionID: 2, EntryPoint: "rest.follow_up"}, Recorded: domain.UncleInverted}
	require.NoError(t, valid.Validate())

	tests := []struct {
		name  string
		edit  func(*domain.UncleRetraction)
		field string
	}{
		{"no acting session", func(r *domain.UncleRetraction) { r.Edge.UncleSessionID = 0 }, "acting_session_id"},
		{"no target session", func(r *domain.UncleRetraction) { r.Edge.SessionID = -2 }, "target_session_id"},
		{"no entry point", func(r *domain.UncleRetraction) { r.Edge.EntryPoint = "" }, "entry_point"},
		{"no recorded outcome", func(r *domain.UncleRetraction) { r.Recorded = 0 }, "recorded"},
		{"an outcome recording never answers", func(r *domain.UncleRetraction) { r.Recorded = domain.UncleRefusedBudgetExhausted + 1 }, "recorded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := valid
			tt.edit(&r)
			var ve *validation.Error
			require.ErrorAs(t, r.Validate(), &ve)
			require.Equal(t, tt.field, ve.Violations[0].Field)
		})
	}
}

// TestUncleRetractionChangedLines: a retraction that undid something gives
// both sessions a sentence saying the edge was withdrawn because the
// delivery via the entry point failed, and what became of an inverted
// edge; one that undid nothing gives neither a line.
func TestUncleRetractionChangedLines(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := domain.UncleEdge{UncleSessionID: 7, SessionID: 9, EntryPoint: "mcp.action_session.follow_up", RecordedBy: "the queue"}
	retraction := func(o domain.UncleOutcome) domain.UncleRetraction {
		return domain.UncleRetraction{Edge: e, Recorded: o}
	}
	inversion := domain.RetractionFacts{Present: true, ReplacedInverse: true, ActingReachesTargetOtherwise: domain.Unreachable}

	tests := []struct {
		name           string
		recorded       domain.UncleOutcome
		facts          domain.RetractionFacts
		acting, target string
	}{
		{
			"written", domain.UncleWritten, inversion,
			"[Lineage] This session is no longer an uncle of session #9: its delivery to that session via mcp.action_session.follow_up failed, so the uncle edge #7 → #9 recorded for it was withdrawn (by the queue)",
			"[Lineage] Session #7 is no longer an uncle of this session: its delivery to this session via mcp.action_session.follow_up failed, so the uncle edge #7 → #9 recorded for it was withdrawn (by the queue)",
		},
		{
			"inverted and restored", domain.UncleInverted, inversion,
			"[Lineage] Seniority inversion withdrawn: this session's delivery to session #9 via mcp.action_session.follow_up failed (uncle edge #7 → #9 withdrawn and #9 → #7 restored) (by the queue)",
			"[Lineage] Seniority inversion withdrawn: session #7's delivery to this session via mcp.action_session.follow_up failed (uncle edge #7 → #9 withdrawn and #9 → #7 restored) (by the queue)",
		},
		{
			"inverted, not restored", domain.UncleInverted, domain.RetractionFacts{Present: true, ReplacedInverse: true, ActingReachesTargetOtherwise: domain.Reachable},
			"[Lineage] Seniority inversion withdrawn: this session's delivery to session #9 via mcp.action_session.follow_up failed (uncle edge #7 → #9 withdrawn; #9 → #7 not restored: session #7 still reaches session #9 by another path, so it would close a cycle) (by the queue)",
			"[Lineage] Seniority inversion withdrawn: session #7's delivery to this session via mcp.action_session.follow_up failed (uncle edge #7 → #9 withdrawn; #9 → #7 not restored: session #7 still reaches session #9 by another path, so it would close a cycle) (by the queue)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := retraction(tt.recorded)
			got, ok := domain.DecideUncleRetraction(r, tt.facts).Changed(r, at)
			require.True(t, ok)
			require.Equal(t, domain.UncleEdgeChanged{Edge: e, Outcome: tt.recorded, Withdrawn: true, At: at, Lines: []domain.TimelineLine{
				{SessionID: 7, Message: tt.acting},
				{SessionID: 9, Message: tt.target},
			}}, got)
		})
	}

	for _, r := range []domain.UncleRetraction{retraction(domain.UncleNothingSelf), retraction(domain.UncleRefusedSenior)} {
		_, ok := domain.DecideUncleRetraction(r, inversion).Changed(r, at)
		require.False(t, ok, "recording %s changed nothing, so its retraction writes no line", r.Recorded)
	}
	r := retraction(domain.UncleWritten)
	_, ok := domain.DecideUncleRetraction(r, domain.RetractionFacts{}).Changed(r, at)
	require.False(t, ok, "an edge no longer there is retracted as nothing, with no line")
}
