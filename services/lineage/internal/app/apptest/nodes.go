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
}

var _ app.NodeRepository = (*Nodes)(nil)

// NewNodes returns an empty repository.
func NewNodes() *Nodes {
	return &Nodes{claimed: map[string]bool{}, nodes: map[int64]domain.Node{}}
}

// ApplyEvent implements app.NodeRepository.
func (f *Nodes) ApplyEvent(ctx context.Context, eventID, _ string, apply func(context.Context, app.NodeWriter) error) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimed[eventID] {
		return false, nil
	}
	tx := &nodesTx{committed: f.nodes, writes: map[int64]domain.Node{}}
	if err := apply(ctx, tx); err != nil {
		return false, err
	}
	maps.Copy(f.nodes, tx.writes)
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
}

func (tx *nodesTx) Save(_ context.Context, n domain.Node) error {
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
