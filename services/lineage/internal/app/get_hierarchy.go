package app

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// GetHierarchy walks the lineage graph around one session: up to every root
// reachable over spawn and uncle edges, then down from those roots.
type GetHierarchy struct{ graph GraphReader }

// NewGetHierarchy returns the use case over graph.
func NewGetHierarchy(graph GraphReader) GetHierarchy { return GetHierarchy{graph: graph} }

// Handle returns the hierarchy of sessionID; a session lineage holds no
// node for is domain.ErrNotFound.
//
// The walk, in three steps, each breadth-first with one query per level:
//
//   - Up from the session over both edge kinds, at most domain.MaxDepth
//     levels and domain.MaxNodes sessions. The roots are the sessions reached
//     with no senior among those reached: true roots, and the highest
//     ancestors reached when a bound cut the walk.
//   - The origin follows spawn parents only, through the sessions reached.
//   - Down from every root at once (depth 0), at most domain.MaxDepth levels
//     below the roots and domain.MaxNodes sessions in all. Each session is
//     kept once, at its shallowest depth, under the first senior that
//     reached it (in id order); the visited set also stops any cycle.
//
// Hitting either bound in either walk marks the hierarchy truncated. The
// session asked about is always in it: if the bound cut its branch it is
// appended last, at its shallowest depth from a root.
func (uc GetHierarchy) Handle(ctx context.Context, sessionID int64) (domain.Hierarchy, error) {
	if sessionID <= 0 {
		return domain.Hierarchy{}, validation.Invalid("session_id", "must be a positive session id")
	}
	graph := uc.graph
	var err error
	if s, ok := graph.(HierarchySnapshotter); ok {
		if graph, err = s.HierarchySnapshot(ctx, sessionID); err != nil {
			return domain.Hierarchy{}, fmt.Errorf("get hierarchy of %d: %w", sessionID, err)
		}
	}
	self, err := graph.HierarchyNodes(ctx, []int64{sessionID})
	if err != nil {
		return domain.Hierarchy{}, fmt.Errorf("get hierarchy of %d: %w", sessionID, err)
	}
	if len(self) == 0 {
		return domain.Hierarchy{}, domain.SessionNotKnown(sessionID)
	}

	up, err := walkUp(ctx, graph, sessionID)
	if err != nil {
		return domain.Hierarchy{}, fmt.Errorf("walk up from %d: %w", sessionID, err)
	}
	down, err := walkDown(ctx, graph, up.roots)
	if err != nil {
		return domain.Hierarchy{}, fmt.Errorf("walk down to %d: %w", sessionID, err)
	}

	h := domain.Hierarchy{OriginID: up.origin, RootIDs: up.roots, Truncated: up.truncated || down.truncated}
	cut := false
	if _, ok := down.depth[sessionID]; !ok {
		// Only MaxNodes can cut it: every root is within MaxDepth above it.
		// It takes the place of the last session admitted, a leaf of the
		// deepest level reached, so the bound holds with it included.
		cut, h.Truncated = true, true
		if len(down.depth) >= domain.MaxNodes && len(down.order) > 0 {
			last := down.order[len(down.order)-1]
			delete(down.depth, last)
			delete(down.via, last)
		}
	}
	ids := slices.Collect(maps.Keys(down.depth))
	if cut {
		ids = append(ids, sessionID)
	}
	nodes, err := graph.HierarchyNodes(ctx, ids)
	if err != nil {
		return domain.Hierarchy{}, fmt.Errorf("load hierarchy of %d: %w", sessionID, err)
	}
	byID := make(map[int64]domain.HierarchyNode, len(nodes))
	for _, n := range nodes {
		byID[n.ID] = n
	}
	if _, ok := byID[sessionID]; !ok { // deleted while we walked
		return domain.Hierarchy{}, domain.SessionNotKnown(sessionID)
	}

	// Outline order: depth first from each root, children in id order.
	children := map[int64][]int64{}
	for id, p := range down.via {
		children[p] = append(children[p], id)
	}
	var visit func(id int64)
	visit = func(id int64) {
		n, ok := byID[id]
		if !ok { // deleted while we walked; its subtree goes with it
			return
		}
		n.Depth, n.Current = down.depth[id], id == sessionID
		h.Nodes = append(h.Nodes, n)
		kids := children[id]
		slices.Sort(kids)
		for _, k := range kids {
			visit(k)
		}
	}
	for _, r := range h.RootIDs {
		visit(r)
	}
	if cut {
		n := byID[sessionID]
		n.Current = true
		n.Depth = domain.MaxDepth
		for _, r := range h.RootIDs {
			n.Depth = min(n.Depth, up.dist[r])
		}
		h.Nodes = append(h.Nodes, n)
	}
	if h.Truncated {
		h.TruncationReason = domain.TruncationReason
	}
	return h, nil
}

type upWalk struct {
	dist      map[int64]int // hops above the session asked about
	origin    int64
	roots     []int64
	truncated bool
}

func walkUp(ctx context.Context, graph GraphReader, sessionID int64) (upWalk, error) {
	w := upWalk{dist: map[int64]int{sessionID: 0}}
	spawnParent := map[int64]int64{}
	hasSenior := map[int64]bool{}
	frontier := []int64{sessionID}
	// The query at level MaxDepth only detects truncation: seniors found
	// there are not added.
	for depth := 1; len(frontier) > 0; depth++ {
		edges, err := graph.UpEdges(ctx, frontier)
		if err != nil {
			return upWalk{}, err
		}
		sortEdges(edges, func(e domain.Edge) int64 { return e.JuniorID }, func(e domain.Edge) int64 { return e.SeniorID })
		var next []int64
		for _, e := range edges {
			if e.Kind == domain.EdgeSpawn {
				spawnParent[e.JuniorID] = e.SeniorID
			}
			if _, seen := w.dist[e.SeniorID]; seen {
				hasSenior[e.JuniorID] = true
				continue
			}
			if depth > domain.MaxDepth || len(w.dist) >= domain.MaxNodes {
				w.truncated = true
				continue
			}
			hasSenior[e.JuniorID] = true
			w.dist[e.SeniorID] = depth
			next = append(next, e.SeniorID)
		}
		frontier = next
	}

	// The origin follows spawn parents only; the guard stops a cycle of
	// spawn edges, which events could in principle describe.
	w.origin = sessionID
	for seen := map[int64]bool{sessionID: true}; ; {
		p, ok := spawnParent[w.origin]
		if _, reached := w.dist[p]; !ok || !reached || seen[p] {
			break
		}
		seen[p], w.origin = true, p
	}
	w.roots = []int64{w.origin}
	var others []int64
	for id := range w.dist {
		if !hasSenior[id] && id != w.origin {
			others = append(others, id)
		}
	}
	slices.Sort(others)
	w.roots = append(w.roots, others...)
	return w, nil
}

type downWalk struct {
	depth     map[int64]int
	via       map[int64]int64 // the senior each non-root session was reached through
	order     []int64         // non-root sessions in the order they were admitted
	truncated bool
}

func walkDown(ctx context.Context, graph GraphReader, roots []int64) (downWalk, error) {
	w := downWalk{depth: map[int64]int{}, via: map[int64]int64{}}
	for _, r := range roots {
		w.depth[r] = 0
	}
	frontier := slices.Clone(roots)
	for depth := 1; len(frontier) > 0; depth++ {
		edges, err := graph.DownEdges(ctx, frontier)
		if err != nil {
			return downWalk{}, err
		}
		sortEdges(edges, func(e domain.Edge) int64 { return e.SeniorID }, func(e domain.Edge) int64 { return e.JuniorID })
		var next []int64
		for _, e := range edges {
			if _, seen := w.depth[e.JuniorID]; seen {
				continue
			}
			if depth > domain.MaxDepth || len(w.depth) >= domain.MaxNodes {
				w.truncated = true
				continue
			}
			w.depth[e.JuniorID] = depth
			w.via[e.JuniorID] = e.SeniorID
			w.order = append(w.order, e.JuniorID)
			next = append(next, e.JuniorID)
		}
		frontier = next
	}
	return w, nil
}

// sortEdges orders a level's edges so that which sessions a bound cuts does
// not depend on the order rows came back in: by first, then spawn before
// uncle, then by second.
func sortEdges(edges []domain.Edge, first, second func(domain.Edge) int64) {
	slices.SortFunc(edges, func(a, b domain.Edge) int {
		return cmp.Or(cmp.Compare(first(a), first(b)), cmp.Compare(a.Kind, b.Kind), cmp.Compare(second(a), second(b)))
	})
}
