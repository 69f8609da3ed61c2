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
	// not overwrite a newer one. Equal times overwrite. A deleted session's
	// snapshot is ignored: deletion is final.
	Save(ctx context.Context, n domain.Node) error
	// Delete drops session id's node and the uncle edges touching it, both
	// ways, and remembers the deletion. Deleting an unknown node is not an
	// error: the deletion is still remembered.
	Delete(ctx context.Context, id int64) error
}

// GraphReader reads the lineage graph a level at a time: every call takes a
// whole breadth-first frontier, so a walk costs one query per level rather
// than one per session.
type GraphReader interface {
	// UpEdges returns the edges whose junior is one of ids and whose senior
	// is a node lineage holds: spawn parents and uncles.
	UpEdges(ctx context.Context, ids []int64) ([]domain.Edge, error)
	// DownEdges returns the edges whose senior is one of ids and whose
	// junior is a node lineage holds: spawn children and the sessions the
	// senior is uncle of.
	DownEdges(ctx context.Context, ids []int64) ([]domain.Edge, error)
	// HierarchyNodes returns the nodes lineage holds among ids, with
	// ParentID and UncleIDs filled in, in no particular order.
	HierarchyNodes(ctx context.Context, ids []int64) ([]domain.HierarchyNode, error)
}

// HierarchySnapshotter is a GraphReader that can read, in one round trip,
// everything a walk of one session will ask for. GetHierarchy walks over
// the snapshot when its reader offers one; the snapshot asks the reader for
// anything it lacks, so the walk is the same either way.
type HierarchySnapshotter interface {
	HierarchySnapshot(ctx context.Context, sessionID int64) (GraphReader, error)
}

// UncleEdgeRecorder serialises uncle-edge writes, recordings and
// retractions alike. Record runs fn in a transaction that no other Record
// interleaves with, and commits what fn wrote when fn returns nil.
type UncleEdgeRecorder interface {
	Record(ctx context.Context, fn func(context.Context, UncleGraph) error) error
}

// UncleGraph is the graph inside Record's transaction: the reads the
// uncle-edge rules (domain.DecideUncleEdge, domain.DecideUncleRetraction)
// are decided from, the writes that carry a decision out, and the
// announcement of what changed.
type UncleGraph interface {
	// Missing returns those of ids that lineage holds no node for, in order.
	Missing(ctx context.Context, ids ...int64) ([]int64, error)
	// Reaches answers whether from reaches to going down (spawn parent to
	// child, uncle to junior) over at most budget visited sessions.
	Reaches(ctx context.Context, from, to int64, budget int) (domain.Reach, error)
	// ReachesIndirectly is Reaches not counting the uncle edge from → to.
	ReachesIndirectly(ctx context.Context, from, to int64, budget int) (domain.Reach, error)
	// SpawnAncestor answers whether ancestor is on the spawn chain above of.
	SpawnAncestor(ctx context.Context, ancestor, of int64, budget int) (domain.Reach, error)
	// HasUncleEdge reports whether uncle is recorded as junior's uncle.
	HasUncleEdge(ctx context.Context, uncle, junior int64) (bool, error)
	// ReplacedInverse reports whether the uncle edge uncle → junior was
	// written by an inversion and keeps the edge junior → uncle it replaced.
	ReplacedInverse(ctx context.Context, uncle, junior int64) (bool, error)
	DeleteUncleEdge(ctx context.Context, uncle, junior int64) error
	InsertUncleEdge(ctx context.Context, e domain.UncleEdge) error
	// InvertUncleEdge replaces the uncle edge target → acting by e (acting
	// → target), which keeps where the replaced edge came from and when.
	InvertUncleEdge(ctx context.Context, e domain.UncleEdge) error
	// RestoreReplaced undoes InvertUncleEdge: it deletes uncle → junior and
	// puts back the edge junior → uncle it replaced, as it was recorded.
	RestoreReplaced(ctx context.Context, uncle, junior int64) error
	// Announce records c in the outbox, in the transaction that makes the
	// change, for lifecycle to write c's lines on the sessions' timelines:
	// the change and its announcement commit together or not at all.
	Announce(ctx context.Context, c domain.UncleEdgeChanged) error
}
