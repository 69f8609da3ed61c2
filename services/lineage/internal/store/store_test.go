package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// testSets are the service's migration sets (service.MigrationSets), so
// every package of the module shares one template database.
var testSets = []pgdb.MigrationSet{inbox.Migrations, outbox.Migrations, Migrations}

// TestSpawnParentColumnMatchesDomain checks that the generated column
// derives the same spawn parent as domain.SpawnParent, since the index walk
// down and the node's own answer must never disagree.
func TestSpawnParentColumnMatchesDomain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tx := pgtest.Tx(t, testSets...)
	repo := nodes{db: tx}

	for i, edges := range [][2]*int64{{nil, nil}, {ptr(1), nil}, {nil, ptr(2)}, {ptr(1), ptr(2)}} {
		n := node(int64(100+i), at(1))
		n.ParentSessionID, n.RouterSessionID = edges[0], edges[1]
		require.NoError(t, repo.Save(ctx, n))

		var column *int64
		require.NoError(t, tx.QueryRow(ctx, `SELECT spawn_parent_id FROM session_nodes WHERE session_id = $1`, n.SessionID).Scan(&column))
		require.Equal(t, domain.SpawnParent(edges[0], edges[1]), column, "case %d", i)
		got, err := repo.Get(ctx, n.SessionID)
		require.NoError(t, err)
		requireNode(t, n, got, "recorded edges are kept verbatim")
	}
}

// TestSpawnChildrenUseIndex checks that the walk down is index-backed.
//
// No planner switches: enable_seqscan=off would make any index "win" and
// prove only that the index exists. Instead the table gets a realistic
// shape (10,000 nodes, about ten children per parent, edges split between
// the column and the metadata fallback) and real statistics from ANALYZE,
// and the planner must choose session_nodes_spawn_parent itself. A fresh
// database keeps these rows and statistics away from other tests.
func TestSpawnChildrenUseIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.DB(t, testSets...)

	_, err := pool.Exec(ctx, `
		INSERT INTO session_nodes (session_id, title, agent_root, status, genesis, scheduling_class,
			parent_session_id, router_session_id, session_updated_at)
		SELECT g, 'node ' || g, 'zimmer', 'waiting', 'api', 'priority',
			CASE WHEN g > 10 AND g % 2 = 0 THEN g / 10 END,
			CASE WHEN g > 10 AND g % 2 = 1 THEN g / 10 END,
			now()
		FROM generate_series(1, 10000) AS g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE session_nodes`)
	require.NoError(t, err)

	var plan string
	require.NoError(t, pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+spawnChildrenSQL, int64(42)).Scan(&plan))
	require.Contains(t, plan, `"Index Name": "session_nodes_spawn_parent"`, plan)
	require.NotContains(t, plan, `"Seq Scan"`, plan)

	ids, err := New(pool).SpawnChildIDs(ctx, 42)
	require.NoError(t, err)
	require.Equal(t, []int64{420, 421, 422, 423, 424, 425, 426, 427, 428, 429}, ids, "children by column and by metadata alike")
}

func TestMigrationsReversible(t *testing.T) {
	t.Parallel()
	servicetest.AssertMigrationsReversible(t, Migrations)
}
