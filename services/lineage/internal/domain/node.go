// Package domain is lineage's model of the session graph: nodes, the spawn
// edge each one records, and the rules that derive the tree from them.
package domain

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Node is lineage's copy of one session: what the graph renders and walks.
// Lineage learns it from lifecycle's events, so it is a read model that may
// lag lifecycle, never the source of truth.
type Node struct {
	SessionID       int64
	Title           string
	AgentRoot       string
	Status          string
	Genesis         string
	SchedulingClass string
	// ParentSessionID is the first-class spawn edge the session recorded.
	ParentSessionID *int64
	// RouterSessionID is the older record of the same fact, kept in
	// custom_metadata.router_session_id by sessions spawned before the
	// column existed. Kept as recorded; the tree is derived from both.
	RouterSessionID *int64
	// UpdatedAt is lifecycle's updated_at of the snapshot: a newer one
	// replaces an older one, never the other way round.
	UpdatedAt time.Time
}

// SpawnParentID is the session that spawned n, if lineage knows of one.
func (n Node) SpawnParentID() *int64 { return SpawnParent(n.ParentSessionID, n.RouterSessionID) }

// Validate reports the first field that makes n unusable as a node.
func (n Node) Validate() error {
	switch {
	case n.SessionID <= 0:
		return validation.Invalid("session.id", "must be a positive session id")
	case n.ParentSessionID != nil && *n.ParentSessionID <= 0:
		return validation.Invalid("session.parent_session_id", "must be a positive session id when set")
	case n.ParentSessionID != nil && *n.ParentSessionID == n.SessionID:
		return validation.Invalid("session.parent_session_id", "a session cannot spawn itself")
	case n.UpdatedAt.IsZero():
		return validation.Invalid("session.updated_at", "missing; it orders snapshots of the session")
	}
	return nil
}

// SpawnParent derives the spawn edge: the parent_session_id column first,
// the router_session_id metadata key as the fallback. Deriving instead of
// backfilling the column never rewrites what a session recorded about itself.
func SpawnParent(parentSessionID, routerSessionID *int64) *int64 {
	if parentSessionID != nil {
		return parentSessionID
	}
	return routerSessionID
}

// RouterSessionID reads custom_metadata.router_session_id of session
// sessionID. Metadata is free-form, so a value counts only when it is a JSON
// number or a decimal string naming a positive session id other than the
// session itself; anything else is ignored rather than rejected, because
// refusing the event would not make the metadata any better.
func RouterSessionID(sessionID int64, metadata map[string]any) *int64 {
	id, ok := sessionIDFrom(metadata["router_session_id"])
	if !ok || id <= 0 || id == sessionID {
		return nil
	}
	return &id
}

func sessionIDFrom(v any) (int64, bool) {
	switch v := v.(type) {
	case float64: // how a JSON number (and a protobuf Struct) decodes
		// Integral and inside int64; 2^63 itself is a float64 but not an int64.
		if v != math.Trunc(v) || v < math.MinInt64 || v >= math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	case json.Number:
		id, err := v.Int64()
		return id, err == nil
	case string:
		id, err := strconv.ParseInt(v, 10, 64)
		return id, err == nil
	}
	return 0, false
}
