// Package store keeps lineage's nodes in Postgres.
package store

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the session_nodes migration set.
var Migrations = pgdb.MigrationSet{Name: "lineage", FS: pgdb.MigrationsDir(migrations)}

// Store is the app.NodeRepository on the service's pool.
type Store struct {
	nodes
	pool *pgxpool.Pool
	// signal wakes this process's outbox relays after a commit that
	// recorded an event; nil: they find it by polling.
	signal *outbox.Signal
}

var _ app.NodeRepository = (*Store)(nil)

// New returns a store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{nodes: nodes{db: pool}, pool: pool} }

// WithSignal makes s notify signal after every commit that recorded an
// outbox event, and returns s.
func (s *Store) WithSignal(signal *outbox.Signal) *Store {
	s.signal = signal
	return s
}

// ApplyEvent implements app.NodeRepository. Read committed suffices: the
// inbox insert of a concurrent duplicate waits for the first transaction and
// then does nothing, and Save is a single conditional upsert.
func (s *Store) ApplyEvent(ctx context.Context, eventID, topic string, apply func(context.Context, app.NodeWriter) error) (bool, error) {
	var applied bool
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		var err error
		if applied, err = inbox.Claim(ctx, tx, eventID, topic); err != nil || !applied {
			return err
		}
		return apply(ctx, nodes{db: tx})
	})
	if err != nil {
		return false, err
	}
	return applied, nil
}

// nodes reads and writes session_nodes through the pool or a transaction.
type nodes struct{ db pgdb.DBTX }

// Save implements app.NodeWriter. The WHERE of the upsert keeps the newer
// snapshot in one statement, so concurrent events need no row lock taken in
// advance; the tombstone check keeps a deleted session deleted.
func (n nodes) Save(ctx context.Context, node domain.Node) error {
	_, err := n.db.Exec(ctx, `
		INSERT INTO session_nodes AS cur (session_id, title, agent_root, status, genesis, scheduling_class,
			parent_session_id, router_session_id, session_updated_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
		WHERE NOT EXISTS (SELECT 1 FROM session_node_tombstones WHERE session_id = $1)
		ON CONFLICT (session_id) DO UPDATE SET
			title = excluded.title,
			agent_root = excluded.agent_root,
			status = excluded.status,
			genesis = excluded.genesis,
			scheduling_class = excluded.scheduling_class,
			parent_session_id = excluded.parent_session_id,
			router_session_id = excluded.router_session_id,
			session_updated_at = excluded.session_updated_at
		WHERE cur.session_updated_at <= excluded.session_updated_at`,
		node.SessionID, node.Title, node.AgentRoot, node.Status, node.Genesis, node.SchedulingClass,
		node.ParentSessionID, node.RouterSessionID, node.UpdatedAt)
	if err != nil {
		return fmt.Errorf("save session node %d: %w", node.SessionID, err)
	}
	return nil
}

// Delete implements app.NodeWriter. The foreign keys of
// session_uncle_links cascade, so the node's uncle edges go with it both
// ways; children keep the spawn parent they recorded.
func (n nodes) Delete(ctx context.Context, id int64) error {
	if _, err := n.db.Exec(ctx, `INSERT INTO session_node_tombstones (session_id) VALUES ($1) ON CONFLICT DO NOTHING`, id); err != nil {
		return fmt.Errorf("remember deletion of session %d: %w", id, err)
	}
	if _, err := n.db.Exec(ctx, `DELETE FROM session_nodes WHERE session_id = $1`, id); err != nil {
		return fmt.Errorf("delete session node %d: %w", id, err)
	}
	return nil
}

// Get implements app.NodeRepository.
func (n nodes) Get(ctx context.Context, id int64) (domain.Node, error) {
	var node domain.Node
	err := n.db.QueryRow(ctx, `
		SELECT session_id, title, agent_root, status, genesis, scheduling_class,
			parent_session_id, router_session_id, session_updated_at
		FROM session_nodes WHERE session_id = $1`, id).Scan(
		&node.SessionID, &node.Title, &node.AgentRoot, &node.Status, &node.Genesis, &node.SchedulingClass,
		&node.ParentSessionID, &node.RouterSessionID, &node.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Node{}, fmt.Errorf("get session node %d: %w", id, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Node{}, fmt.Errorf("get session node %d: %w", id, err)
	}
	return node, nil
}

// spawnChildrenSQL is shared with the test that checks its plan.
const spawnChildrenSQL = `SELECT session_id FROM session_nodes WHERE spawn_parent_id = $1 ORDER BY session_id`

// SpawnChildIDs implements app.NodeRepository, reading the generated
// spawn_parent_id so the walk down stays on session_nodes_spawn_parent.
func (n nodes) SpawnChildIDs(ctx context.Context, id int64) ([]int64, error) {
	rows, err := n.db.Query(ctx, spawnChildrenSQL, id)
	if err != nil {
		return nil, fmt.Errorf("list spawn children of %d: %w", id, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("list spawn children of %d: %w", id, err)
	}
	return ids, nil
}
