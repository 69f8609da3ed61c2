package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// BenchmarkReachability runs the uncle-edge reachability search at its
// budget: up a 6,000-session chain, which stops after 5,000 sessions. The
// spawn and uncle variants cover the two edge kinds; each op is one query.
//
//	go test -run '^$' -bench . -benchtime 200x ./internal/store/
func BenchmarkReachability(b *testing.B) {
	const n = 6000
	g := setupGraph(b)
	ctx := context.Background()
	_, err := g.pool.Exec(ctx, `
		INSERT INTO session_nodes (session_id, title, agent_root, status, genesis, scheduling_class,
			parent_session_id, session_updated_at)
		SELECT g, 'chain', 'zimmer', 'running', 'api', 'spot', NULLIF(g - 1, 0), now()
		FROM generate_series(1, $1::int) AS g`, n)
	require.NoError(b, err)
	_, err = g.pool.Exec(ctx, `
		INSERT INTO session_nodes (session_id, title, agent_root, status, genesis, scheduling_class, session_updated_at)
		SELECT 10000 + g, 'chain', 'zimmer', 'running', 'api', 'spot', now() FROM generate_series(1, $1::int) AS g`, n)
	require.NoError(b, err)
	_, err = g.pool.Exec(ctx, `
		INSERT INTO session_uncle_links (uncle_session_id, session_id, entry_point)
		SELECT 10000 + g - 1, 10000 + g, 'bench' FROM generate_series(2, $1::int) AS g`, n)
	require.NoError(b, err)
	_, err = g.pool.Exec(ctx, `ANALYZE`)
	require.NoError(b, err)
	graph := uncleGraph{db: g.pool}

	for _, bc := range []struct {
		name     string
		from, to int64
	}{
		{"spawn chain", 1, n},
		{"uncle chain", 10001, 10000 + n},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				r, err := graph.Reaches(ctx, bc.from, bc.to, domain.ReachabilityBudget)
				if err != nil || r != domain.ReachUnknown {
					b.Fatalf("reach: %v, %v", r, err)
				}
			}
		})
	}
}

// BenchmarkHierarchy walks a hierarchy at both bounds (a spawn chain nine
// sessions long, 20 leaves on each of its first eight, asked about from the
// bottom: 8 levels up, 150 sessions down) and a lone session, in one run so
// that their ratio is measured on the same machine state. Each runs level by
// level over the store and over HierarchySnapshot.
func BenchmarkHierarchy(b *testing.B) {
	g := setupGraph(b)
	var nodes []spawn
	for id := int64(1); id <= 9; id++ {
		nodes = append(nodes, spawn{id, id - 1})
	}
	leaf := int64(100)
	for parent := int64(1); parent <= 8; parent++ {
		for range 20 {
			nodes = append(nodes, spawn{leaf, parent})
			leaf++
		}
	}
	nodes = append(nodes, spawn{5000, 0})
	g.seed(b, nodes...)
	_, err := g.pool.Exec(context.Background(), `ANALYZE`)
	require.NoError(b, err)
	ctx := context.Background()

	h, err := g.hierarchy.Handle(ctx, 9)
	require.NoError(b, err)
	require.True(b, h.Truncated)
	require.Len(b, h.Nodes, domain.MaxNodes)

	for _, bc := range []struct {
		name string
		id   int64
	}{{"bound", 9}, {"lone", 5000}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := g.hierarchy.Handle(ctx, bc.id); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The same walk over HierarchySnapshot: one statement.
		b.Run(bc.name+" snapshot", func(b *testing.B) {
			for b.Loop() {
				snap, err := g.store.HierarchySnapshot(ctx, bc.id)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := app.NewGetHierarchy(snap).Handle(ctx, bc.id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
