package domain_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// TestTheSpecsQuotedWordsAreSaidVerbatim (issue 23 rule 21): where
// hierarchy-and-human-messages.md quotes what a reader is shown, lineage
// shows exactly that.
func TestTheSpecsQuotedWordsAreSaidVerbatim(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Showing at most 150 sessions, 8 levels from the highest ancestor reached. This tree is larger.", domain.TruncationReason)
	require.Equal(t, "Authored in this session: 3. Elsewhere in the hierarchy: 0.", fmt.Sprintf(domain.CountsLine, 3, 0))
	require.Equal(t, []string{"### Session Hierarchy", "### Human Messages", "### People"},
		[]string{domain.SectionHierarchy, domain.SectionHumanMessages, domain.SectionPeople})
	require.Equal(t, []string{"Zimmer web UI", "Slack"}, []string{domain.ChannelWebUI.Label(), domain.ChannelSlack.Label()})
	require.Equal(t, "- #101 [zimmer-router] {web_ui · priority} Add spot vs priority classification\n"+
		"  - #102 [zimmer] {web_ui · priority} Implement the genesis column ← this session\n",
		domain.Hierarchy{OriginID: 101, RootIDs: []int64{101}, Nodes: []domain.HierarchyNode{
			{ID: 101, Title: "Add spot vs priority classification", AgentRoot: "zimmer-router", Genesis: "web_ui", SchedulingClass: "priority"},
			{ID: 102, Title: "Implement the genesis column", AgentRoot: "zimmer", Genesis: "web_ui", SchedulingClass: "priority", Depth: 1,
				ParentID: ptr(101), Current: true},
		}}.Outline())
}
