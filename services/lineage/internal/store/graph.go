package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

var (
	_ app.GraphReader       = (*Store)(nil)
	_ app.UncleEdgeRecorder = (*Store)(nil)
	_ domain.UncleGraph     = uncleGraph{}
)

// upEdgesSQL: the spawn parents (known nodes only: a parent lineage never
// heard of, or one since deleted, is not in the graph) and the uncles of a
// frontier. Uncle edges always join known nodes, by their foreign keys.
const upEdgesSQL = `
	SELECT n.spawn_parent_id, n.session_id, false
	FROM session_nodes n JOIN session_nodes p ON p.session_id = n.spawn_parent_id
	WHERE n.session_id = ANY($1)
	UNION ALL
	SELECT l.uncle_session_id, l.session_id, true
	FROM session_uncle_links l WHERE l.session_id = ANY($1)`

// downEdgesSQL: the spawn children (on session_nodes_spawn_parent) and the
// juniors (on session_uncle_links_uncle) of a frontier.
const downEdgesSQL = `
	SELECT n.spawn_parent_id, n.session_id, false
	FROM session_nodes n WHERE n.spawn_parent_id = ANY($1)
	UNION ALL
	SELECT l.uncle_session_id, l.session_id, true
	FROM session_uncle_links l WHERE l.uncle_session_id = ANY($1)`

// UpEdges implements app.GraphReader.
func (s *Store) UpEdges(ctx context.Context, ids []int64) ([]domain.Edge, error) {
	return queryEdges(ctx, s.pool, upEdgesSQL, ids)
}

// DownEdges implements app.GraphReader.
func (s *Store) DownEdges(ctx context.Context, ids []int64) ([]domain.Edge, error) {
	return queryEdges(ctx, s.pool, downEdgesSQL, ids)
}

func queryEdges(ctx context.Context, db pgdb.DBTX, sql string, ids []int64) ([]domain.Edge, error) {
	rows, err := db.Query(ctx, sql, ids)
	if err != nil {
		return nil, fmt.Errorf("list edges of %d sessions: %w", len(ids), err)
	}
	edges, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Edge, error) {
		var (
			e     domain.Edge
			uncle bool
		)
		err := row.Scan(&e.SeniorID, &e.JuniorID, &uncle)
		e.Kind = domain.EdgeSpawn
		if uncle {
			e.Kind = domain.EdgeUncle
		}
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list edges of %d sessions: %w", len(ids), err)
	}
	return edges, nil
}

// HierarchyNodes implements app.GraphReader.
func (s *Store) HierarchyNodes(ctx context.Context, ids []int64) ([]domain.HierarchyNode, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT n.session_id, n.title, n.agent_root, n.status, n.genesis, n.scheduling_class, n.spawn_parent_id,
			ARRAY(SELECT l.uncle_session_id FROM session_uncle_links l
				WHERE l.session_id = n.session_id ORDER BY l.uncle_session_id)
		FROM session_nodes n WHERE n.session_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("load %d hierarchy nodes: %w", len(ids), err)
	}
	nodes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.HierarchyNode, error) {
		var n domain.HierarchyNode
		err := row.Scan(&n.ID, &n.Title, &n.AgentRoot, &n.Status, &n.Genesis, &n.SchedulingClass, &n.ParentID, &n.UncleIDs)
		if len(n.UncleIDs) == 0 {
			n.UncleIDs = nil
		}
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("load %d hierarchy nodes: %w", len(ids), err)
	}
	return nodes, nil
}

// uncleLockKey is the one advisory lock every uncle-edge write takes.
//
// One key for the whole graph, not one per pair, because a cycle need not
// involve the pair being written: A → B, B → X and X → A written at once
// each pass their own check against a graph missing the other two. With the
// lock held from before the first read to the commit, and read committed
// taking a fresh snapshot per statement, every write checks a graph that
// holds every edge committed before it. Postgres releases the lock only
// after the commit is visible, so the next holder always sees it.
//
// The cost is acceptable: uncle edges are written when a session queues or
// interrupts another, a handful a minute across the fleet, and one write
// holds the lock for at most three budgeted searches (tens of
// milliseconds at the worst). Readers never take it. Spawn edges arrive by
// events and do not take it either: they are history, recorded as they
// happened; the walks' visited guards are the backstop against a spawn
// record that contradicts the uncle edges.
const uncleLockKey int64 = 0x6c696e656167650a // "lineage\n"

var errRollback = errors.New("roll back the uncle edge decision")

// Record implements app.UncleEdgeRecorder.
func (s *Store) Record(ctx context.Context, decide func(context.Context, domain.UncleGraph) (domain.UncleDecision, error)) (domain.UncleDecision, error) {
	var d domain.UncleDecision
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, uncleLockKey); err != nil {
			return fmt.Errorf("take the uncle edge lock: %w", err)
		}
		var err error
		if d, err = decide(ctx, uncleGraph{db: tx}); err != nil {
			return err
		}
		if !d.Commit {
			return errRollback
		}
		return nil
	})
	switch {
	case errors.Is(err, errRollback):
		return d, nil
	case pgdb.Code(err) == pgdb.CodeForeignKeyViolation:
		return domain.UncleDecision{}, fmt.Errorf("write uncle edge: %w", domain.ErrNotFound)
	case err != nil:
		return domain.UncleDecision{}, err
	}
	return d, nil
}

// uncleGraph is domain.UncleGraph inside Record's transaction.
type uncleGraph struct{ db pgdb.DBTX }

// Missing implements domain.UncleGraph.
func (g uncleGraph) Missing(ctx context.Context, ids ...int64) ([]int64, error) {
	rows, err := g.db.Query(ctx, `
		SELECT id FROM unnest($1::bigint[]) WITH ORDINALITY AS u(id, ord)
		WHERE NOT EXISTS (SELECT 1 FROM session_nodes WHERE session_id = u.id)
		ORDER BY ord`, ids)
	if err != nil {
		return nil, fmt.Errorf("check sessions are known: %w", err)
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("check sessions are known: %w", err)
	}
	return missing, nil
}

// reachSQL searches up from $1 over spawn parents and uncles, breadth-first
// (each round of the recursive CTE is a level), for $2. UNION, unlike UNION
// ALL, drops ids already produced: the visited set. The LIMIT is the node
// budget: Postgres evaluates a recursive CTE lazily, so the search stops
// once $3 sessions have been produced, whatever their depth.
//
// Up rather than down because up fans out less: a session has one spawn
// parent and a few uncles, while a router has hundreds of children.
const reachSQL = `
	WITH RECURSIVE up(id) AS (
		SELECT $1::bigint
		UNION
		SELECT s.id FROM up CROSS JOIN LATERAL (
			SELECT n.spawn_parent_id FROM session_nodes n
			WHERE n.session_id = up.id AND n.spawn_parent_id IS NOT NULL
			UNION ALL
			SELECT l.uncle_session_id FROM session_uncle_links l WHERE l.session_id = up.id
		) s(id)
		WHERE up.id <> $2
	)
	SELECT count(*), coalesce(bool_or(id = $2), false) FROM (SELECT id FROM up LIMIT $3) v`

// spawnReachSQL is reachSQL over spawn parents only.
const spawnReachSQL = `
	WITH RECURSIVE up(id) AS (
		SELECT $1::bigint
		UNION
		SELECT n.spawn_parent_id FROM up JOIN session_nodes n ON n.session_id = up.id
		WHERE n.spawn_parent_id IS NOT NULL AND up.id <> $2
	)
	SELECT count(*), coalesce(bool_or(id = $2), false) FROM (SELECT id FROM up LIMIT $3) v`

// Reaches implements domain.UncleGraph.
func (g uncleGraph) Reaches(ctx context.Context, from, to int64, budget int) (domain.Reach, error) {
	return reach(ctx, g.db, reachSQL, from, to, budget)
}

// SpawnAncestor implements domain.UncleGraph.
func (g uncleGraph) SpawnAncestor(ctx context.Context, ancestor, of int64, budget int) (domain.Reach, error) {
	return reach(ctx, g.db, spawnReachSQL, ancestor, of, budget)
}

// reach runs a search up from to for from. It asks for one session more
// than the budget: producing it means the budget ran out before the search
// did.
func reach(ctx context.Context, db pgdb.DBTX, sql string, from, to int64, budget int) (domain.Reach, error) {
	var (
		visited int
		found   bool
	)
	if err := db.QueryRow(ctx, sql, to, from, budget+1).Scan(&visited, &found); err != nil {
		return 0, fmt.Errorf("search for a path %d → %d: %w", from, to, err)
	}
	switch {
	case found:
		return domain.Reachable, nil
	case visited > budget:
		return domain.ReachUnknown, nil
	}
	return domain.Unreachable, nil
}

// HasUncleEdge implements domain.UncleGraph.
func (g uncleGraph) HasUncleEdge(ctx context.Context, uncle, junior int64) (bool, error) {
	var ok bool
	err := g.db.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM session_uncle_links WHERE session_id = $1 AND uncle_session_id = $2)`,
		junior, uncle).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up uncle edge %d → %d: %w", uncle, junior, err)
	}
	return ok, nil
}

// DeleteUncleEdge implements domain.UncleGraph.
func (g uncleGraph) DeleteUncleEdge(ctx context.Context, uncle, junior int64) error {
	_, err := g.db.Exec(ctx, `DELETE FROM session_uncle_links WHERE session_id = $1 AND uncle_session_id = $2`, junior, uncle)
	if err != nil {
		return fmt.Errorf("delete uncle edge %d → %d: %w", uncle, junior, err)
	}
	return nil
}

// InsertUncleEdge implements domain.UncleGraph.
func (g uncleGraph) InsertUncleEdge(ctx context.Context, e domain.UncleEdge) error {
	_, err := g.db.Exec(ctx, `
		INSERT INTO session_uncle_links (session_id, uncle_session_id, entry_point) VALUES ($1, $2, $3)`,
		e.SessionID, e.UncleSessionID, e.EntryPoint)
	if err != nil {
		return fmt.Errorf("insert uncle edge %d → %d: %w", e.UncleSessionID, e.SessionID, err)
	}
	return nil
}
