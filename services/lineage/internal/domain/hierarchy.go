package domain

import (
	"fmt"
	"strings"
	"unicode"
)

// Bounds of a hierarchy walk and of the reachability check that guards
// uncle edges. The walk is bounded twice, by depth and by node count, in
// both directions; the reachability check only by the sessions it visits,
// because a depth bound would miss any cycle longer than MaxDepth.
const (
	// MaxDepth is how many levels a walk goes up from the session asked
	// about, and how many it goes down from the highest ancestor reached.
	MaxDepth = 8
	// MaxNodes is the most sessions one hierarchy holds.
	MaxNodes = 150
	// ReachabilityBudget is the most sessions one reachability search
	// visits before it gives up.
	ReachabilityBudget = 5000
)

// Hierarchy is the lineage graph around one session: every root reached by
// walking up spawn and uncle edges, and every descendant of those roots, each
// session once at its shallowest depth.
type Hierarchy struct {
	// OriginID is the root of the spawn chain of the session asked about,
	// blind to uncle edges so that it never moves.
	OriginID int64
	// RootIDs is every root reached walking up both kinds of edge, origin
	// first, then in id order.
	RootIDs []int64
	// Truncated reports that a bound cut the walk; TruncationReason then
	// says so in words, and is empty otherwise.
	Truncated        bool
	TruncationReason string
	// Nodes are in outline order: depth first from each root in RootIDs,
	// children in id order.
	Nodes []HierarchyNode
}

// HierarchyNode is one session of a Hierarchy.
type HierarchyNode struct {
	ID              int64
	Title           string
	AgentRoot       string
	Status          string
	Genesis         string
	SchedulingClass string
	// Depth is the shallowest distance from a root, counting both edge kinds.
	Depth int
	// ParentID is the spawn parent, as recorded, even when the parent is not
	// in the hierarchy (deleted, or cut by a bound).
	ParentID *int64
	// UncleIDs are the sessions recorded as this one's uncles, in id order.
	UncleIDs []int64
	// Current marks the session the hierarchy was asked about.
	Current bool
}

// Label names n wherever a hierarchy is rendered: its title on one line,
// or "Session #N" when it has none, so that an untitled session is never
// an empty line.
func (n HierarchyNode) Label() string { return SessionLabel(n.ID, n.Title) }

// SessionLabel names session id titled title on one line: the title, or
// "Session #id" when the title shows nothing (empty, blank, or only
// invisible characters).
func SessionLabel(id int64, title string) string {
	t := oneLine(title)
	if strings.IndexFunc(t, visible) >= 0 {
		return t
	}
	return fmt.Sprintf("Session #%d", id)
}

func visible(r rune) bool {
	return !unicode.IsSpace(r) && !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r)
}

// Node returns the node of session id, if the hierarchy holds it.
func (h Hierarchy) Node(id int64) (HierarchyNode, bool) {
	for _, n := range h.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return HierarchyNode{}, false
}

// SessionIDs returns the id of every node, in node order.
func (h Hierarchy) SessionIDs() []int64 {
	ids := make([]int64, 0, len(h.Nodes))
	for _, n := range h.Nodes {
		ids = append(ids, n.ID)
	}
	return ids
}

// HasUncleEdge says whether any node of h has an uncle.
func (h Hierarchy) HasUncleEdge() bool {
	for _, n := range h.Nodes {
		if len(n.UncleIDs) > 0 {
			return true
		}
	}
	return false
}
