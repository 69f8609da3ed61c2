// Package app holds lineage's use cases, one type each, written against the
// domain and the ports below.
package app

import (
	"context"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// NodeRepository stores lineage's nodes.
type NodeRepository interface {
	// ApplyEvent claims eventID in the inbox and runs apply in the same
	// transaction. When the event was claimed before it returns false and
	// does not call apply; when apply fails the claim rolls back with it, so
	// the redelivery retries.
	ApplyEvent(ctx context.Context, eventID, topic string, apply func(context.Context, NodeWriter) error) (applied bool, err error)
	// Get returns session id's node, or an error matching domain.ErrNotFound.
	Get(ctx context.Context, id int64) (domain.Node, error)
	// SpawnChildIDs returns the sessions whose spawn parent is id, in id order.
	SpawnChildIDs(ctx context.Context, id int64) ([]int64, error)
}

// NodeWriter writes inside ApplyEvent's transaction.
type NodeWriter interface {
	// Save stores n unless the stored node is a newer snapshot (a later
	// UpdatedAt): events may arrive out of order, and an old snapshot must
	// not overwrite a newer one. Equal times overwrite.
	Save(ctx context.Context, n domain.Node) error
}
