// Package apptest holds in-memory fakes of the app's ports, for tests that
// need the behaviour of a repository but not Postgres. The store's contract
// test runs the same cases against these fakes and the real store.
package apptest

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// Nodes is an in-memory app.NodeRepository. ApplyEvent is serialised and
// all-or-nothing, like the store's transaction.
type Nodes struct {
	mu      sync.Mutex
	claimed map[string]bool
	nodes   map[int64]domain.Node
	deleted map[int64]bool
}

var _ app.NodeRepository = (*Nodes)(nil)

// NewNodes returns an empty repository.
func NewNodes() *Nodes {
	return &Nodes{claimed: map[string]bool{}, nodes: map[int64]domain.Node{}, deleted: map[int64]bool{}}
}

// ApplyEvent implements app.NodeRepository.
func (f *Nodes) ApplyEvent(ctx context.Context, eventID, _ string, apply func(context.Context, app.NodeWriter) error) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimed[eventID] {
		return false, nil
	}
	tx := &nodesTx{committed: f.nodes, deleted: f.deleted, writes: map[int64]domain.Node{}, deletes: map[int64]bool{}}
	if err := apply(ctx, tx); err != nil {
		return false, err
	}
	maps.Copy(f.nodes, tx.writes)
	for id := range tx.deletes {
		delete(f.nodes, id)
		f.deleted[id] = true
	}
	f.claimed[eventID] = true
	return true, nil
}

// Get implements app.NodeRepository.
func (f *Nodes) Get(_ context.Context, id int64) (domain.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nodes[id]
	if !ok {
		return domain.Node{}, domain.ErrNotFound
	}
	return n, nil
}

// SpawnChildIDs implements app.NodeRepository.
func (f *Nodes) SpawnChildIDs(_ context.Context, id int64) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []int64
	for _, n := range f.nodes {
		if p := n.SpawnParentID(); p != nil && *p == id {
			ids = append(ids, n.SessionID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// nodesTx buffers one ApplyEvent's writes until apply succeeds.
type nodesTx struct {
	committed, writes map[int64]domain.Node
	deleted, deletes  map[int64]bool
}

func (tx *nodesTx) Delete(_ context.Context, id int64) error {
	delete(tx.writes, id)
	tx.deletes[id] = true
	return nil
}

func (tx *nodesTx) Save(_ context.Context, n domain.Node) error {
	if tx.deleted[n.SessionID] || tx.deletes[n.SessionID] {
		return nil
	}
	cur, ok := tx.writes[n.SessionID]
	if !ok {
		cur, ok = tx.committed[n.SessionID]
	}
	if ok && cur.UpdatedAt.After(n.UpdatedAt) {
		return nil
	}
	tx.writes[n.SessionID] = n
	return nil
}
