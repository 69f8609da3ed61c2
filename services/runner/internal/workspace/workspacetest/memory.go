// Package workspacetest holds an in-memory workspace.Repository for tests
// of the code that prepares and uses workspaces.
package workspacetest

import (
	"context"
	"sync"
	"time"

	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

// Memory is a workspace.Repository in a map, held to the Postgres one's
// contract (store's tests run both): one workspace per session, and a path
// held by one on-disk workspace per node.
type Memory struct {
	mu   sync.Mutex
	rows map[int64]workspace.Workspace
}

var _ workspace.Repository = (*Memory)(nil)

// NewMemory returns an empty repository.
func NewMemory() *Memory { return &Memory{rows: map[int64]workspace.Workspace{}} }

// Get implements workspace.Repository.
func (m *Memory) Get(_ context.Context, sessionID int64) (workspace.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.rows[sessionID]
	if !ok {
		return workspace.Workspace{}, workspace.ErrNotFound
	}
	return w, nil
}

// Create implements workspace.Repository.
func (m *Memory) Create(_ context.Context, w workspace.Workspace) (workspace.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.rows[w.SessionID]; ok || m.pathTaken(w) {
		return workspace.Workspace{}, workspace.ErrAlreadyExists
	}
	now := time.Now().UTC()
	w.CreatedAt, w.UpdatedAt = now, now
	m.rows[w.SessionID] = w
	return w, nil
}

// Update implements workspace.Repository.
func (m *Memory) Update(_ context.Context, sessionID int64, fn func(*workspace.Workspace) error) (workspace.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.rows[sessionID]
	if !ok {
		return workspace.Workspace{}, workspace.ErrNotFound
	}
	if err := fn(&w); err != nil {
		return workspace.Workspace{}, err
	}
	w.SessionID, w.CreatedAt = sessionID, m.rows[sessionID].CreatedAt
	if m.pathTaken(w) {
		return workspace.Workspace{}, workspace.ErrAlreadyExists
	}
	w.UpdatedAt = time.Now().UTC()
	m.rows[sessionID] = w
	return w, nil
}

// pathTaken says whether another session's on-disk workspace on w's node
// holds w's path (the table's workspaces_path_on_disk).
func (m *Memory) pathTaken(w workspace.Workspace) bool {
	if !onDisk(w.State) {
		return false
	}
	for id, other := range m.rows {
		if id != w.SessionID && other.Node == w.Node && other.Path == w.Path && onDisk(other.State) {
			return true
		}
	}
	return false
}

func onDisk(s workspace.State) bool {
	return s == workspace.Provisioning || s == workspace.Ready || s == workspace.Retained
}
