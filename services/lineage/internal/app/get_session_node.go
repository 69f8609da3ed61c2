package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// SessionNode is a node with its direct spawn edges.
type SessionNode struct {
	domain.Node
	SpawnChildIDs []int64
}

// GetSessionNode reads one node and its spawn children.
type GetSessionNode struct{ repo NodeRepository }

// NewGetSessionNode returns the use case over repo.
func NewGetSessionNode(repo NodeRepository) GetSessionNode { return GetSessionNode{repo: repo} }

// Handle returns session id's node; a session lineage has not heard of yet
// is domain.ErrNotFound.
func (uc GetSessionNode) Handle(ctx context.Context, id int64) (SessionNode, error) {
	if id <= 0 {
		return SessionNode{}, validation.Invalid("session_id", "must be a positive session id")
	}
	n, err := uc.repo.Get(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return SessionNode{}, domain.SessionNotKnown(id)
	}
	if err != nil {
		return SessionNode{}, fmt.Errorf("get session node %d: %w", id, err)
	}
	children, err := uc.repo.SpawnChildIDs(ctx, id)
	if err != nil {
		return SessionNode{}, fmt.Errorf("get spawn children of %d: %w", id, err)
	}
	return SessionNode{Node: n, SpawnChildIDs: children}, nil
}
