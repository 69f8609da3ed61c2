package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/lineage/internal/events"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

var (
	_ app.GraphReader       = (*Store)(nil)
	_ app.UncleEdgeRecorder = (*Store)(nil)
	_ app.UncleGraph        = (*uncleGraph)(nil)
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

// snapshotSQL runs the whole hierarchy walk of $1 in one statement and
// returns every session it admits, with the edges the walk reads around
// each: the spawn parent (and whether lineage holds it), the uncles, the
// spawn children and the juniors.
//
// Each recursive CTE yields one row per level, carrying the level's
// frontier and every session seen so far, so a session is admitted once,
// at its shallowest depth. A level admits at most $3 minus those seen, in
// GetHierarchy's admission order: by the first edge that reaches each new
// session, edges ordered by the frontier session's id, spawn before uncle,
// then the new session's id. $2 is the depth bound. The walk down starts
// from the roots of the walk up: the origin (the spawn chain's root among
// the sessions reached) and the sessions reached with no senior among them.
//
// The cut, the roots and the order of the outline are still GetHierarchy's
// to decide: the snapshot only answers its queries, and a session this
// statement did not admit is read level by level, as before.
const snapshotSQL = `
	WITH RECURSIVE
	up(depth, frontier, seen) AS (
		SELECT 0, ARRAY[n.session_id], ARRAY[n.session_id]
		FROM session_nodes n WHERE n.session_id = $1
		UNION ALL
		SELECT up.depth + 1, nxt.ids, up.seen || nxt.ids
		FROM up CROSS JOIN LATERAL (
			SELECT array_agg(c.id) FROM (
				SELECT d.id, d.junior, d.kind FROM (
					SELECT DISTINCT ON (e.id) e.id, e.junior, e.kind FROM (
						SELECT n.spawn_parent_id, n.session_id, 1
						FROM session_nodes n JOIN session_nodes p ON p.session_id = n.spawn_parent_id
						WHERE n.session_id = ANY(up.frontier)
						UNION ALL
						SELECT l.uncle_session_id, l.session_id, 2
						FROM session_uncle_links l WHERE l.session_id = ANY(up.frontier)
					) e(id, junior, kind)
					WHERE e.id <> ALL(up.seen)
					ORDER BY e.id, e.junior, e.kind
				) d
				ORDER BY d.junior, d.kind, d.id
				LIMIT $3 - cardinality(up.seen)
			) c
		) nxt(ids)
		WHERE up.depth < $2 AND cardinality(up.seen) < $3 AND nxt.ids IS NOT NULL
	),
	up_seen(ids) AS (SELECT seen FROM up ORDER BY depth DESC LIMIT 1),
	origin(id, path) AS (
		SELECT $1::bigint, ARRAY[$1::bigint] FROM up_seen
		UNION ALL
		SELECT p.id, o.path || p.id
		FROM origin o CROSS JOIN up_seen u
		CROSS JOIN LATERAL (SELECT n.spawn_parent_id FROM session_nodes n WHERE n.session_id = o.id) p(id)
		WHERE p.id = ANY(u.ids) AND p.id <> ALL(o.path)
	),
	roots(ids) AS (
		SELECT array_agg(r.id) FROM up_seen u CROSS JOIN unnest(u.ids) r(id)
		WHERE r.id = (SELECT id FROM origin ORDER BY cardinality(path) DESC LIMIT 1)
		OR NOT EXISTS (SELECT 1 FROM session_nodes n WHERE n.session_id = r.id AND n.spawn_parent_id = ANY(u.ids))
		AND NOT EXISTS (SELECT 1 FROM session_uncle_links l WHERE l.session_id = r.id AND l.uncle_session_id = ANY(u.ids))
	),
	down(depth, frontier, seen) AS (
		SELECT 0, ids, ids FROM roots WHERE ids IS NOT NULL
		UNION ALL
		SELECT down.depth + 1, nxt.ids, down.seen || nxt.ids
		FROM down CROSS JOIN LATERAL (
			SELECT array_agg(c.id) FROM (
				SELECT d.id, d.senior, d.kind FROM (
					SELECT DISTINCT ON (e.id) e.id, e.senior, e.kind FROM (
						SELECT n.session_id, n.spawn_parent_id, 1
						FROM session_nodes n WHERE n.spawn_parent_id = ANY(down.frontier)
						UNION ALL
						SELECT l.session_id, l.uncle_session_id, 2
						FROM session_uncle_links l WHERE l.uncle_session_id = ANY(down.frontier)
					) e(id, senior, kind)
					WHERE e.id <> ALL(down.seen)
					ORDER BY e.id, e.senior, e.kind
				) d
				ORDER BY d.senior, d.kind, d.id
				LIMIT $3 - cardinality(down.seen)
			) c
		) nxt(ids)
		WHERE down.depth < $2 AND cardinality(down.seen) < $3 AND nxt.ids IS NOT NULL
	),
	walked(id) AS (
		SELECT unnest(ids) FROM up_seen
		UNION
		SELECT unnest(seen) FROM (SELECT seen FROM down ORDER BY depth DESC LIMIT 1) d
	),
	children(id, ids) AS (
		SELECT c.spawn_parent_id, array_agg(c.session_id ORDER BY c.session_id)
		FROM session_nodes c WHERE c.spawn_parent_id IN (SELECT id FROM walked) GROUP BY 1
	),
	uncles(id, ids) AS (
		SELECT l.session_id, array_agg(l.uncle_session_id ORDER BY l.uncle_session_id)
		FROM session_uncle_links l WHERE l.session_id IN (SELECT id FROM walked) GROUP BY 1
	),
	juniors(id, ids) AS (
		SELECT l.uncle_session_id, array_agg(l.session_id ORDER BY l.session_id)
		FROM session_uncle_links l WHERE l.uncle_session_id IN (SELECT id FROM walked) GROUP BY 1
	)
	SELECT n.session_id, n.title, n.agent_root, n.status, n.genesis, n.scheduling_class, n.spawn_parent_id,
		p.session_id IS NOT NULL, coalesce(u.ids, '{}'), coalesce(c.ids, '{}'), coalesce(j.ids, '{}')
	FROM walked w
	JOIN session_nodes n ON n.session_id = w.id
	LEFT JOIN session_nodes p ON p.session_id = n.spawn_parent_id
	LEFT JOIN uncles u ON u.id = n.session_id
	LEFT JOIN children c ON c.id = n.session_id
	LEFT JOIN juniors j ON j.id = n.session_id`

// HierarchySnapshot reads, in one statement, everything GetHierarchy's walk
// of sessionID will ask for, and returns a GraphReader that answers from it.
// Handle over the snapshot returns what it returns over the store, in one
// round trip rather than one per level; should the walk ask about a session
// the snapshot lacks, the snapshot asks the store. The snapshot serves one
// walk of sessionID and is then dropped.
func (s *Store) HierarchySnapshot(ctx context.Context, sessionID int64) (app.GraphReader, error) {
	return snapshotHierarchy(ctx, s.pool, s, sessionID)
}

// snapNode is one session of a snapshot with the edges around it.
type snapNode struct {
	node        domain.HierarchyNode
	parentKnown bool
	children    []int64 // spawn children
	juniors     []int64 // the sessions it is uncle of
}

type hierarchySnapshot struct {
	nodes    map[int64]snapNode
	absent   int64 // the session asked about, when lineage holds no node for it
	fallback app.GraphReader
}

var _ app.GraphReader = (*hierarchySnapshot)(nil)

func snapshotHierarchy(ctx context.Context, db pgdb.DBTX, fallback app.GraphReader, sessionID int64) (*hierarchySnapshot, error) {
	rows, err := db.Query(ctx, snapshotSQL, sessionID, domain.MaxDepth, domain.MaxNodes)
	if err != nil {
		return nil, fmt.Errorf("read hierarchy of %d: %w", sessionID, err)
	}
	nodes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (snapNode, error) {
		var n snapNode
		err := row.Scan(&n.node.ID, &n.node.Title, &n.node.AgentRoot, &n.node.Status, &n.node.Genesis,
			&n.node.SchedulingClass, &n.node.ParentID, &n.parentKnown, &n.node.UncleIDs, &n.children, &n.juniors)
		if len(n.node.UncleIDs) == 0 {
			n.node.UncleIDs = nil
		}
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("read hierarchy of %d: %w", sessionID, err)
	}
	snap := &hierarchySnapshot{nodes: make(map[int64]snapNode, len(nodes)), fallback: fallback}
	for _, n := range nodes {
		snap.nodes[n.node.ID] = n
	}
	if len(nodes) == 0 {
		snap.absent = sessionID
	}
	return snap, nil
}

// UpEdges implements app.GraphReader.
func (s *hierarchySnapshot) UpEdges(ctx context.Context, ids []int64) ([]domain.Edge, error) {
	var edges []domain.Edge
	var missing []int64
	for _, id := range ids {
		n, ok := s.nodes[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		if n.parentKnown {
			edges = append(edges, domain.Edge{SeniorID: *n.node.ParentID, JuniorID: id, Kind: domain.EdgeSpawn})
		}
		for _, u := range n.node.UncleIDs {
			edges = append(edges, domain.Edge{SeniorID: u, JuniorID: id, Kind: domain.EdgeUncle})
		}
	}
	return s.withFallback(ctx, edges, missing, s.fallback.UpEdges)
}

// DownEdges implements app.GraphReader.
func (s *hierarchySnapshot) DownEdges(ctx context.Context, ids []int64) ([]domain.Edge, error) {
	var edges []domain.Edge
	var missing []int64
	for _, id := range ids {
		n, ok := s.nodes[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		for _, c := range n.children {
			edges = append(edges, domain.Edge{SeniorID: id, JuniorID: c, Kind: domain.EdgeSpawn})
		}
		for _, j := range n.juniors {
			edges = append(edges, domain.Edge{SeniorID: id, JuniorID: j, Kind: domain.EdgeUncle})
		}
	}
	return s.withFallback(ctx, edges, missing, s.fallback.DownEdges)
}

func (s *hierarchySnapshot) withFallback(ctx context.Context, edges []domain.Edge, missing []int64,
	read func(context.Context, []int64) ([]domain.Edge, error),
) ([]domain.Edge, error) {
	if len(missing) == 0 {
		return edges, nil
	}
	more, err := read(ctx, missing)
	if err != nil {
		return nil, err
	}
	return append(edges, more...), nil
}

// HierarchyNodes implements app.GraphReader.
func (s *hierarchySnapshot) HierarchyNodes(ctx context.Context, ids []int64) ([]domain.HierarchyNode, error) {
	nodes := make([]domain.HierarchyNode, 0, len(ids))
	var missing []int64
	done := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if done[id] {
			continue
		}
		done[id] = true
		if n, ok := s.nodes[id]; ok {
			n.node.UncleIDs = slices.Clone(n.node.UncleIDs)
			nodes = append(nodes, n.node)
		} else if id != s.absent {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nodes, nil
	}
	more, err := s.fallback.HierarchyNodes(ctx, missing)
	if err != nil {
		return nil, err
	}
	return append(nodes, more...), nil
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
// holds the lock for three budgeted searches (tens of milliseconds at the
// worst). Readers never take it. Spawn edges arrive by
// events and do not take it either: they are history, recorded as they
// happened; the walks' visited guards are the backstop against a spawn
// record that contradicts the uncle edges.
const uncleLockKey int64 = 0x6c696e656167650a // "lineage\n"

// Record implements app.UncleEdgeRecorder. A foreign key violation means a
// session was deleted between fn's reads and its write: ErrNotFound. After
// a commit that announced a change, it wakes this process's relays.
func (s *Store) Record(ctx context.Context, fn func(context.Context, app.UncleGraph) error) error {
	var g *uncleGraph
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, uncleLockKey); err != nil {
			return fmt.Errorf("take the uncle edge lock: %w", err)
		}
		g = &uncleGraph{db: tx}
		return fn(ctx, g)
	})
	if pgdb.Code(err) == pgdb.CodeForeignKeyViolation {
		return fmt.Errorf("write uncle edge: %w", domain.ErrNotFound)
	}
	if err == nil && g.announced {
		s.signal.Notify()
	}
	return err
}

// uncleGraph is app.UncleGraph inside Record's transaction.
type uncleGraph struct {
	db pgdb.DBTX
	// announced: the transaction recorded an outbox event.
	announced bool
}

// Announce implements app.UncleGraph: the event rides in the transaction
// that changed the graph, so it exists exactly when the change does.
func (g *uncleGraph) Announce(ctx context.Context, c domain.UncleEdgeChanged) error {
	a, err := events.EncodeUncleEdgeChanged(c)
	if err != nil {
		return err
	}
	a.Event.Trace = outbox.TraceOf(ctx)
	var rows outbox.Rows
	rows.Add(a)
	if _, err := g.db.Exec(ctx, rows.InsertSQL("", 1), rows.Args()...); err != nil {
		return fmt.Errorf("enqueue %s: %w", a.Event.Topic, err)
	}
	g.announced = true
	return nil
}

// Missing implements app.UncleGraph.
func (g *uncleGraph) Missing(ctx context.Context, ids ...int64) ([]int64, error) {
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
//
// With $4 true the search leaves out the uncle edge $2 → $1, the one
// ReachesIndirectly does not count.
const reachSQL = `
	WITH RECURSIVE up(id) AS (
		SELECT $1::bigint
		UNION
		SELECT s.id FROM up CROSS JOIN LATERAL (
			SELECT n.spawn_parent_id FROM session_nodes n
			WHERE n.session_id = up.id AND n.spawn_parent_id IS NOT NULL
			UNION ALL
			SELECT l.uncle_session_id FROM session_uncle_links l
			WHERE l.session_id = up.id AND NOT ($4::bool AND l.session_id = $1 AND l.uncle_session_id = $2)
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

// Reaches implements app.UncleGraph.
func (g *uncleGraph) Reaches(ctx context.Context, from, to int64, budget int) (domain.Reach, error) {
	return reach(ctx, g.db, reachSQL, from, to, budget, false)
}

// ReachesIndirectly implements app.UncleGraph.
func (g *uncleGraph) ReachesIndirectly(ctx context.Context, from, to int64, budget int) (domain.Reach, error) {
	return reach(ctx, g.db, reachSQL, from, to, budget, true)
}

// SpawnAncestor implements app.UncleGraph.
func (g *uncleGraph) SpawnAncestor(ctx context.Context, ancestor, of int64, budget int) (domain.Reach, error) {
	return reach(ctx, g.db, spawnReachSQL, ancestor, of, budget)
}

// reach runs a search up from to for from; more are sql's parameters after
// the first three. It asks for one session more than the budget: producing
// it means the budget ran out before the search did.
func reach(ctx context.Context, db pgdb.DBTX, sql string, from, to int64, budget int, more ...any) (domain.Reach, error) {
	var (
		visited int
		found   bool
	)
	args := append([]any{to, from, budget + 1}, more...)
	if err := db.QueryRow(ctx, sql, args...).Scan(&visited, &found); err != nil {
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

// HasUncleEdge implements app.UncleGraph.
func (g *uncleGraph) HasUncleEdge(ctx context.Context, uncle, junior int64) (bool, error) {
	var ok bool
	err := g.db.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM session_uncle_links WHERE session_id = $1 AND uncle_session_id = $2)`,
		junior, uncle).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up uncle edge %d → %d: %w", uncle, junior, err)
	}
	return ok, nil
}

// DeleteUncleEdge implements app.UncleGraph.
func (g *uncleGraph) DeleteUncleEdge(ctx context.Context, uncle, junior int64) error {
	_, err := g.db.Exec(ctx, `DELETE FROM session_uncle_links WHERE session_id = $1 AND uncle_session_id = $2`, junior, uncle)
	if err != nil {
		return fmt.Errorf("delete uncle edge %d → %d: %w", uncle, junior, err)
	}
	return nil
}

// InsertUncleEdge implements app.UncleGraph.
func (g *uncleGraph) InsertUncleEdge(ctx context.Context, e domain.UncleEdge) error {
	_, err := g.db.Exec(ctx, `
		INSERT INTO session_uncle_links (session_id, uncle_session_id, entry_point) VALUES ($1, $2, $3)`,
		e.SessionID, e.UncleSessionID, e.EntryPoint)
	if err != nil {
		return fmt.Errorf("insert uncle edge %d → %d: %w", e.UncleSessionID, e.SessionID, err)
	}
	return nil
}

// InvertUncleEdge implements app.UncleGraph in one statement: the row
// written keeps the replaced edge's entry point and time. Nothing to
// replace is an error: the caller decided from a read, under the lock,
// that the edge was there.
func (g *uncleGraph) InvertUncleEdge(ctx context.Context, e domain.UncleEdge) error {
	tag, err := g.db.Exec(ctx, `
		WITH replaced AS (
			DELETE FROM session_uncle_links WHERE session_id = $2 AND uncle_session_id = $1
			RETURNING entry_point, created_at
		)
		INSERT INTO session_uncle_links (session_id, uncle_session_id, entry_point, replaced_entry_point, replaced_created_at)
		SELECT $1, $2, $3, r.entry_point, r.created_at FROM replaced r`,
		e.SessionID, e.UncleSessionID, e.EntryPoint)
	if err != nil {
		return fmt.Errorf("invert uncle edge %d → %d: %w", e.SessionID, e.UncleSessionID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("invert uncle edge %d → %d: no such edge", e.SessionID, e.UncleSessionID)
	}
	return nil
}

// ReplacedInverse implements app.UncleGraph.
func (g *uncleGraph) ReplacedInverse(ctx context.Context, uncle, junior int64) (bool, error) {
	var ok bool
	err := g.db.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM session_uncle_links
			WHERE session_id = $1 AND uncle_session_id = $2 AND replaced_entry_point IS NOT NULL)`,
		junior, uncle).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up what uncle edge %d → %d replaced: %w", uncle, junior, err)
	}
	return ok, nil
}

// RestoreReplaced implements app.UncleGraph in one statement. Nothing to
// restore is an error, for the reason InvertUncleEdge gives.
func (g *uncleGraph) RestoreReplaced(ctx context.Context, uncle, junior int64) error {
	tag, err := g.db.Exec(ctx, `
		WITH withdrawn AS (
			DELETE FROM session_uncle_links
			WHERE session_id = $1 AND uncle_session_id = $2 AND replaced_entry_point IS NOT NULL
			RETURNING replaced_entry_point, replaced_created_at
		)
		INSERT INTO session_uncle_links (session_id, uncle_session_id, entry_point, created_at)
		SELECT $2, $1, w.replaced_entry_point, w.replaced_created_at FROM withdrawn w`,
		junior, uncle)
	if err != nil {
		return fmt.Errorf("restore uncle edge %d → %d: %w", junior, uncle, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("restore uncle edge %d → %d: uncle edge %d → %d replaced none", junior, uncle, uncle, junior)
	}
	return nil
}
