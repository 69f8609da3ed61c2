package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

func TestGetHierarchySpecExample(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	router := node(101, at(1))
	router.Title, router.AgentRoot = "Add spot vs priority classification", "zimmer-router"
	worker := node(102, at(1))
	worker.RouterSessionID = ptr(101) // the metadata fallback is a spawn edge too
	for i, n := range []domain.Node{router, worker} {
		_, err := b.apply.Handle(t.Context(), app.SessionEvent{ID: []string{evt1, evt2}[i], Created: &n})
		require.NoError(t, err)
	}

	for _, id := range []int64{101, 102} {
		h, err := b.hierarchy.Handle(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, int64(101), h.OriginID)
		require.Equal(t, []int64{101}, h.RootIDs)
		require.False(t, h.Truncated)
		require.Empty(t, h.TruncationReason)
		require.Equal(t, []int64{101, 102}, h.SessionIDs())
		require.Equal(t, domain.HierarchyNode{
			ID: 102, Title: "Implement the genesis column", AgentRoot: "zimmer", Status: "running",
			Genesis: "web_ui", SchedulingClass: "priority", Depth: 1, ParentID: ptr(101), Current: id == 102,
		}, h.Nodes[1])
	}
	h, err := b.hierarchy.Handle(t.Context(), 102)
	require.NoError(t, err)
	require.Equal(t, ""+
		"- #101 [zimmer-router] {web_ui · priority} Add spot vs priority classification\n"+
		"  - #102 [zimmer] {web_ui · priority} Implement the genesis column ← this session\n",
		h.Outline())

	_, err = b.hierarchy.Handle(t.Context(), 999)
	require.ErrorIs(t, err, domain.ErrNotFound)
}

// TestGetHierarchyUncles: an uncle pulls its whole hierarchy into view, the
// origin stays the spawn root and leads the roots, and a session reached by
// two paths appears once, at its shallowest depth.
func TestGetHierarchyUncles(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	// Tree 1: 1 → {2, 3}, 3 → 4. Tree 10: 10 → 11. 11 is uncle of 4; 2 is
	// uncle of 4 too (a second path inside tree 1).
	b.seed(t, spawn{1, 0}, spawn{2, 1}, spawn{3, 1}, spawn{4, 3}, spawn{10, 0}, spawn{11, 10})
	require.Equal(t, domain.UncleWritten, b.mustRecord(t, 11, 4))
	require.Equal(t, domain.UncleWritten, b.mustRecord(t, 2, 4))

	h, err := b.hierarchy.Handle(t.Context(), 4)
	require.NoError(t, err)
	require.Equal(t, int64(1), h.OriginID)
	require.Equal(t, []int64{1, 10}, h.RootIDs)
	require.False(t, h.Truncated)
	require.Equal(t, []int64{1, 2, 4, 3, 10, 11}, h.SessionIDs())
	require.Equal(t, ""+
		"- #1 [zimmer] {web_ui · priority} session 1\n"+
		"  - #2 [zimmer] {web_ui · priority} session 2\n"+
		"    - #4 [zimmer] {web_ui · priority} session 4 (spawned by #3) (uncles: #2, #11) ← this session\n"+
		"  - #3 [zimmer] {web_ui · priority} session 3\n"+
		"- #10 [zimmer] {web_ui · priority} session 10\n"+
		"  - #11 [zimmer] {web_ui · priority} session 11\n",
		h.Outline())
	require.Equal(t, []int64{2, 11}, h.Nodes[2].UncleIDs)
	require.Equal(t, 2, h.Nodes[2].Depth)

	// From the uncle's side the junior's tree is in view as well.
	h, err = b.hierarchy.Handle(t.Context(), 11)
	require.NoError(t, err)
	require.Equal(t, int64(10), h.OriginID)
	require.Equal(t, []int64{10}, h.RootIDs)
	require.Equal(t, []int64{10, 11, 4}, h.SessionIDs(), "down from 10 only: 4's spawn tree is not above 11")
}

// TestGetHierarchyBounds walks a 300-session tree: a router with 290
// children and a chain below its last child, the session asked about deep
// in that chain.
func TestGetHierarchyBounds(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	nodes := []spawn{{1, 0}}
	for id := int64(2); id <= 291; id++ {
		nodes = append(nodes, spawn{id, 1})
	}
	for id := int64(292); id <= 300; id++ { // 291 → 292 → … → 300
		nodes = append(nodes, spawn{id, id - 1})
	}
	b.seed(t, nodes...)
	counting := &countingReader{GraphReader: b.store}
	get := app.NewGetHierarchy(counting)

	t.Run("asked-about session cut by MaxNodes is still included", func(t *testing.T) {
		h, err := get.Handle(t.Context(), 296) // depth 6 under 1
		require.NoError(t, err)
		require.True(t, h.Truncated)
		require.Equal(t, domain.TruncationReason, h.TruncationReason)
		require.Len(t, h.Nodes, domain.MaxNodes)
		last := h.Nodes[len(h.Nodes)-1]
		require.Equal(t, int64(296), last.ID)
		require.True(t, last.Current)
		require.Equal(t, 6, last.Depth)
		require.Equal(t, int64(1), h.OriginID)
		require.Equal(t, []int64{1}, h.RootIDs)
		outline := h.Outline()
		require.Contains(t, outline, "\n    …\n            - #296 [zimmer] {web_ui · priority} session 296 (spawned by #295) ← this session\n")
		require.True(t, strings.HasSuffix(outline, "… "+domain.TruncationReason+"\n"), outline)
	})

	t.Run("MaxDepth cuts the walk up and down", func(t *testing.T) {
		h, err := get.Handle(t.Context(), 300) // depth 10 under 1
		require.NoError(t, err)
		require.True(t, h.Truncated)
		require.Equal(t, int64(292), h.OriginID, "the highest spawn ancestor reached, 8 levels up")
		require.Equal(t, []int64{292}, h.RootIDs)
		require.Equal(t, []int64{292, 293, 294, 295, 296, 297, 298, 299, 300}, h.SessionIDs())
		require.Equal(t, 8, h.Nodes[8].Depth)
		require.Contains(t, h.Outline(), "- #292 [zimmer] {web_ui · priority} session 292 (spawned by #291)\n")
	})

	t.Run("one query per level", func(t *testing.T) {
		counting.reset()
		_, err := get.Handle(t.Context(), 296)
		require.NoError(t, err)
		// Up: 6 levels and one that finds nothing; down: 2 levels (the cap
		// fills at level 1) and one more; two node loads.
		require.LessOrEqual(t, counting.calls(), 2*(domain.MaxDepth+1)+2, "calls: %v", counting.calls())
		require.LessOrEqual(t, counting.calls(), 14)
	})

	t.Run("a lone session", func(t *testing.T) {
		b.seed(t, spawn{1000, 0})
		h, err := get.Handle(t.Context(), 1000)
		require.NoError(t, err)
		require.Equal(t, domain.Hierarchy{
			OriginID: 1000, RootIDs: []int64{1000},
			Nodes: []domain.HierarchyNode{{
				ID: 1000, Title: "session 1000", AgentRoot: "zimmer", Status: "running",
				Genesis: "web_ui", SchedulingClass: "priority", Current: true,
			}},
		}, h)
	})
}

// TestGetHierarchyCycleTerminates: the walk's visited guard stops a cycle
// that no correct writer would create, here written straight to the table.
func TestGetHierarchyCycleTerminates(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	b.seed(t, spawn{1, 0}, spawn{2, 1}, spawn{3, 2})
	b.link(t, [2]int64{3, 1})
	h, err := b.hierarchy.Handle(t.Context(), 2)
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{1, 2, 3}, h.SessionIDs())
}

type countingReader struct {
	app.GraphReader
	n int
}

func (c *countingReader) reset()     { c.n = 0 }
func (c *countingReader) calls() int { return c.n }
func (c *countingReader) UpEdges(ctx context.Context, ids []int64) ([]domain.Edge, error) {
	c.n++
	return c.GraphReader.UpEdges(ctx, ids)
}

func (c *countingReader) DownEdges(ctx context.Context, ids []int64) ([]domain.Edge, error) {
	c.n++
	return c.GraphReader.DownEdges(ctx, ids)
}

func (c *countingReader) HierarchyNodes(ctx context.Context, ids []int64) ([]domain.HierarchyNode, error) {
	c.n++
	return c.GraphReader.HierarchyNodes(ctx, ids)
}

// TestSessionEventsFeedTheGraph: updated keeps the newest snapshot; deleted
// drops the node and its uncle edges both ways, leaves its children's
// recorded parent alone, and stays final.
func TestSessionEventsFeedTheGraph(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	ctx := t.Context()
	eventN := 0
	send := func(ev app.SessionEvent) bool {
		t.Helper()
		eventN++
		ev.ID = fmt.Sprintf("00000000-0000-4000-8000-%012d", eventN)
		applied, err := b.apply.Handle(ctx, ev)
		require.NoError(t, err)
		return applied
	}
	snapshot := func(id int64, parent *int64, title string, sec int64) *domain.Node {
		n := node(id, at(sec))
		n.ParentSessionID, n.Title = parent, title
		return &n
	}
	send(app.SessionEvent{Created: snapshot(1, nil, "router", 1)})
	send(app.SessionEvent{Created: snapshot(2, ptr(1), "worker", 1)})
	send(app.SessionEvent{Created: snapshot(3, ptr(2), "helper", 1)})
	send(app.SessionEvent{Created: snapshot(4, nil, "other", 1)})
	send(app.SessionEvent{Created: snapshot(5, nil, "junior", 1)})
	require.Equal(t, domain.UncleWritten, b.mustRecord(t, 4, 2)) // 4 is uncle of 2
	require.Equal(t, domain.UncleWritten, b.mustRecord(t, 2, 5)) // 2 is uncle of 5

	// Updated: the newest snapshot by updated_at wins.
	require.True(t, send(app.SessionEvent{Updated: snapshot(2, ptr(1), "worker v2", 3)}))
	require.True(t, send(app.SessionEvent{Updated: snapshot(2, ptr(1), "stale", 2)}))
	got, err := b.store.Get(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, "worker v2", got.Title)

	// Deleted: the node and its edges both ways go; nothing else changes.
	require.True(t, send(app.SessionEvent{SessionID: 2, Deleted: true}))
	_, err = b.hierarchy.Handle(ctx, 2)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.Empty(t, b.uncleEdges(t))
	child, err := b.store.Get(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, ptr(int64(2)), child.ParentSessionID, "the child keeps the parent it recorded")

	h, err := b.hierarchy.Handle(ctx, 3)
	require.NoError(t, err)
	require.Equal(t, int64(3), h.OriginID, "the walk no longer finds the deleted parent")
	require.Equal(t, []int64{3}, h.SessionIDs())
	require.Equal(t, "- #3 [zimmer] {web_ui · priority} helper (spawned by #2) ← this session\n", h.Outline())
	h, err = b.hierarchy.Handle(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []int64{1}, h.SessionIDs())

	// Deletion is final: a late snapshot does not bring the node back.
	require.True(t, send(app.SessionEvent{Updated: snapshot(2, ptr(1), "late", 9)}))
	_, err = b.store.Get(ctx, 2)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.Equal(t, domain.UncleRefusedUnknownSession, b.mustRecord(t, 4, 2))
}

// TestHierarchySnapshotMatchesWalk walks every session of random graphs
// twice, level by level over the store and over a one-statement snapshot,
// and requires the same hierarchy with no query past the snapshot. The
// graphs have spawn chains deeper than MaxDepth, routers whose subtrees
// pass MaxNodes, sessions with dozens of uncles (the cap of the walk up),
// parents lineage never heard of, and uncle links written straight to the
// table, cycles included.
func TestHierarchySnapshotMatchesWalk(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 7))
			b := setupGraph(t)
			const sessions = 300
			var nodes []spawn
			var routers []int64
			for id := int64(1); id <= sessions; id++ {
				var parent int64
				switch r := rng.IntN(20); {
				case id == 1 || r == 0:
				case r == 1:
					parent = 90_000 + id // never heard of
				case r < 8 && len(routers) > 0:
					parent = routers[rng.IntN(len(routers))]
				default:
					parent = max(1, id-1-rng.Int64N(3))
				}
				if rng.IntN(15) == 0 {
					routers = append(routers, id)
				}
				nodes = append(nodes, spawn{id, parent})
			}
			b.seed(t, nodes...)
			var links [][2]int64
			for range sessions / 3 {
				links = append(links, [2]int64{1 + rng.Int64N(sessions), 1 + rng.Int64N(sessions)})
			}
			for range 3 { // hubs: many uncles each
				junior := 1 + rng.Int64N(sessions)
				for range 40 + rng.IntN(40) {
					links = append(links, [2]int64{1 + rng.Int64N(sessions), junior})
				}
			}
			b.linkMany(t, links...)

			ids := make([]int64, 0, sessions+1)
			for id := int64(1); id <= sessions; id++ {
				ids = append(ids, id)
			}
			truncated := requireSnapshotMatches(t, b, append(ids, 999_999)...)
			require.NotZero(t, truncated, "the bounds are exercised")
		})
	}
}

// TestHierarchySnapshotBounds covers each bound of the walk through the
// snapshot, on fixed graphs: the cap up (a session with 200 uncles), the
// cap down with the session asked about cut, and both depth bounds.
func TestHierarchySnapshotBounds(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	nodes := []spawn{{1, 0}, {2, 1}}
	var links [][2]int64
	for id := int64(1000); id < 1200; id++ { // 200 uncles of 2, each with a parent
		nodes = append(nodes, spawn{id, 5000 + id%7}, spawn{5000 + id%7, 0})
		links = append(links, [2]int64{id, 2})
	}
	for id := int64(10); id <= 300; id++ { // a router with 290 children and a chain below
		parent := int64(10)
		if id > 10 && id >= 292 {
			parent = id - 1
		}
		if id == 10 {
			parent = 0
		}
		nodes = append(nodes, spawn{id, parent})
	}
	b.seed(t, dedupe(nodes)...)
	b.linkMany(t, links...)

	h, err := b.hierarchy.Handle(t.Context(), 2)
	require.NoError(t, err)
	require.True(t, h.Truncated, "the walk up hits MaxNodes")
	requireSnapshotMatches(t, b, 1, 2, 1000, 1199, 5000, 10, 11, 291, 292, 296, 300)
}

func dedupe(nodes []spawn) []spawn {
	seen := map[int64]bool{}
	return slices.DeleteFunc(nodes, func(n spawn) bool {
		if seen[n.id] {
			return true
		}
		seen[n.id] = true
		return false
	})
}

// requireSnapshotMatches walks each of ids over the store and over its
// snapshot, requires the same outcome and that the snapshot answered every
// query itself; it returns how many of the hierarchies were truncated.
func requireSnapshotMatches(t *testing.T, b graphBundle, ids ...int64) (truncated int) {
	t.Helper()
	ctx := t.Context()
	perLevel := app.NewGetHierarchy(struct{ app.GraphReader }{b.store}) // the store's methods, no snapshot
	for _, id := range ids {
		want, wantErr := perLevel.Handle(ctx, id)
		fallback := &countingReader{GraphReader: b.store}
		snap, err := snapshotHierarchy(ctx, b.pool, fallback, id)
		require.NoError(t, err)
		got, gotErr := app.NewGetHierarchy(snap).Handle(ctx, id)
		if wantErr != nil {
			require.ErrorIs(t, wantErr, domain.ErrNotFound)
			require.ErrorIs(t, gotErr, domain.ErrNotFound, "session %d", id)
		} else {
			require.NoError(t, gotErr, "session %d", id)
		}
		require.Equal(t, want, got, "session %d", id)
		require.Zero(t, fallback.calls(), "session %d: a query past the snapshot", id)
		if want.Truncated {
			truncated++
		}
	}
	return truncated
}

// TestHierarchySnapshotFallsBack: a snapshot asked about sessions it does
// not hold reads them from the store, so the walk is right whatever it
// holds.
func TestHierarchySnapshotFallsBack(t *testing.T) {
	t.Parallel()
	b := setupGraph(t)
	b.seed(t, spawn{1, 0}, spawn{2, 1}, spawn{3, 2}, spawn{10, 0}, spawn{11, 10})
	b.link(t, [2]int64{11, 3})
	fallback := &countingReader{GraphReader: b.store}
	snap, err := snapshotHierarchy(t.Context(), b.pool, fallback, 10) // holds 10 and 11 only
	require.NoError(t, err)
	perLevel := app.NewGetHierarchy(struct{ app.GraphReader }{b.store})
	for _, id := range []int64{3, 2, 999} {
		want, wantErr := perLevel.Handle(t.Context(), id)
		got, gotErr := app.NewGetHierarchy(snap).Handle(t.Context(), id)
		require.Equal(t, wantErr, gotErr)
		require.Equal(t, want, got)
	}
	require.NotZero(t, fallback.calls())
}

// linkMany writes uncle edges in one statement, bypassing the rules and
// skipping self-loops and repeats.
func (b graphBundle) linkMany(t testing.TB, edges ...[2]int64) {
	t.Helper()
	uncles, juniors := make([]int64, len(edges)), make([]int64, len(edges))
	for i, e := range edges {
		uncles[i], juniors[i] = e[0], e[1]
	}
	_, err := b.pool.Exec(context.Background(), `
		INSERT INTO session_uncle_links (uncle_session_id, session_id, entry_point)
		SELECT u, j, 'test' FROM unnest($1::bigint[], $2::bigint[]) AS e(u, j) WHERE u <> j
		ON CONFLICT DO NOTHING`, uncles, juniors)
	require.NoError(t, err)
}
