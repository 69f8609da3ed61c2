package service_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// uncleLegendWords are the legend's words about uncle edges.
const uncleLegendWords = `"(uncle: #N)" on a line is an uncle edge`

// Issue 23 rule 19: the uncle legend appears in a hierarchy block only
// when the graph has an uncle edge.
func TestUncleLegendOnlyWithAnUncleEdge(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, "")
	ctx := t.Context()
	b.tree(t) // #101 → #102, #103: spawn edges only

	markdown := func(id int64) string {
		t.Helper()
		p, err := b.provenance.GetSessionProvenance(ctx, &lineagev1.GetSessionProvenanceRequest{SessionId: id})
		require.NoError(t, err)
		return p.GetMarkdown()
	}
	require.Contains(t, markdown(102), "How to read the outline")
	require.NotContains(t, markdown(102), uncleLegendWords, "no uncle edge, no uncle legend")

	rec, err := b.lineage.RecordUncleEdge(ctx, &lineagev1.RecordUncleEdgeRequest{ActingSessionId: 103, TargetSessionId: 102, EntryPoint: "rest.follow_up"})
	require.NoError(t, err)
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, rec.GetOutcome())
	require.Contains(t, markdown(102), uncleLegendWords)
}
