package domain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

func TestHierarchySessionIDs(t *testing.T) {
	t.Parallel()
	require.Empty(t, domain.Hierarchy{}.SessionIDs())
	h := domain.Hierarchy{Nodes: []domain.HierarchyNode{{ID: 3}, {ID: 1}, {ID: 2}}}
	require.Equal(t, []int64{3, 1, 2}, h.SessionIDs())
}

func TestOutline(t *testing.T) {
	t.Parallel()
	n := func(id int64, depth int, mod func(*domain.HierarchyNode)) domain.HierarchyNode {
		node := domain.HierarchyNode{ID: id, Title: "t", AgentRoot: "zimmer", Genesis: "web_ui", SchedulingClass: "priority", Depth: depth}
		if mod != nil {
			mod(&node)
		}
		return node
	}
	tests := []struct {
		name string
		h    domain.Hierarchy
		want string
	}{
		{"empty", domain.Hierarchy{}, ""},
		{"lone current", domain.Hierarchy{Nodes: []domain.HierarchyNode{n(1, 0, func(x *domain.HierarchyNode) { x.Current = true })}},
			"- #1 [zimmer] {web_ui · priority} t ← this session\n"},
		{"title cannot forge a line", domain.Hierarchy{Nodes: []domain.HierarchyNode{n(1, 0, func(x *domain.HierarchyNode) { x.Title = "a\n- #9 [x] forged\r\n" })}},
			"- #1 [zimmer] {web_ui · priority} a - #9 [x] forged\n"},
		{"untitled: named by its id", domain.Hierarchy{Nodes: []domain.HierarchyNode{n(7, 0, func(x *domain.HierarchyNode) { x.Title, x.Current = "", true })}},
			"- #7 [zimmer] {web_ui · priority} Session #7 ← this session\n"},
		{"blank title: named by its id", domain.Hierarchy{Nodes: []domain.HierarchyNode{n(7, 0, func(x *domain.HierarchyNode) { x.Title = " \n\t " })}},
			"- #7 [zimmer] {web_ui · priority} Session #7\n"},
		{"no genesis or class", domain.Hierarchy{Nodes: []domain.HierarchyNode{n(1, 0, func(x *domain.HierarchyNode) { x.Genesis, x.SchedulingClass = "", "" })}},
			"- #1 [zimmer] t\n"},
		{"class only", domain.Hierarchy{Nodes: []domain.HierarchyNode{n(1, 0, func(x *domain.HierarchyNode) { x.Genesis = "" })}},
			"- #1 [zimmer] {priority} t\n"},
		{"under an uncle, with its spawn parent named", domain.Hierarchy{Nodes: []domain.HierarchyNode{
			n(1, 0, nil),
			n(2, 1, func(x *domain.HierarchyNode) { x.ParentID = ptr(1) }),
			n(5, 0, nil),
			n(3, 1, func(x *domain.HierarchyNode) { x.ParentID, x.UncleIDs = ptr(2), []int64{5} }),
		}}, "" +
			"- #1 [zimmer] {web_ui · priority} t\n" +
			"  - #2 [zimmer] {web_ui · priority} t\n" +
			"- #5 [zimmer] {web_ui · priority} t\n" +
			"  - #3 [zimmer] {web_ui · priority} t (spawned by #2) (uncle: #5)\n"},
		{"truncated, current placed deeper", domain.Hierarchy{Truncated: true, Nodes: []domain.HierarchyNode{
			n(1, 0, nil),
			n(9, 3, func(x *domain.HierarchyNode) { x.ParentID, x.UncleIDs, x.Current = ptr(8), []int64{4, 7}, true }),
		}}, "" +
			"- #1 [zimmer] {web_ui · priority} t\n" +
			"  …\n" +
			"      - #9 [zimmer] {web_ui · priority} t (spawned by #8) (uncles: #4, #7) ← this session\n" +
			"… " + domain.TruncationReason + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.h.Outline())
		})
	}
}

func TestSessionLabel(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Router", domain.HierarchyNode{ID: 3, Title: "Router"}.Label())
	require.Equal(t, "Session #3", domain.HierarchyNode{ID: 3}.Label())
	require.Equal(t, "Session #3", domain.SessionLabel(3, "\u2028 "))
	require.Equal(t, "a b", domain.SessionLabel(3, "a\nb"))
}

func TestUncleEdgeValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edge  domain.UncleEdge
		field string
	}{
		{"valid", domain.UncleEdge{SessionID: 1, UncleSessionID: 2, EntryPoint: "rest.follow_up"}, ""},
		{"self is valid input; the rules answer it", domain.UncleEdge{SessionID: 1, UncleSessionID: 1, EntryPoint: "x"}, ""},
		{"no acting", domain.UncleEdge{SessionID: 1, EntryPoint: "x"}, "acting_session_id"},
		{"no target", domain.UncleEdge{UncleSessionID: 1, EntryPoint: "x"}, "target_session_id"},
		{"no entry point", domain.UncleEdge{SessionID: 1, UncleSessionID: 2}, "entry_point"},
		{"long entry point", domain.UncleEdge{SessionID: 1, UncleSessionID: 2, EntryPoint: string(make([]byte, 101))}, "entry_point"},
		// The entry point is written into both sessions' timeline lines.
		{"NUL in the entry point", domain.UncleEdge{SessionID: 1, UncleSessionID: 2, EntryPoint: "rest\x00follow_up"}, "entry_point"},
		{"a line break forging a line", domain.UncleEdge{SessionID: 1, UncleSessionID: 2, EntryPoint: "x\n[State Machine] y"}, "entry_point"},
		{"invalid UTF-8 entry point", domain.UncleEdge{SessionID: 1, UncleSessionID: 2, EntryPoint: "rest.\xff"}, "entry_point"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.edge.Validate()
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var ve *validation.Error
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Violations, 1)
			require.Equal(t, tt.field, ve.Violations[0].Field)
		})
	}
}
