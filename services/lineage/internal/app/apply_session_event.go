package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// SessionEvent is one lifecycle event, translated from the wire. At most one
// of Created, Updated and Deleted is set; none when the payload is missing
// or one lineage does not know.
type SessionEvent struct {
	// ID is the producer's event id (a UUID): the idempotency key.
	ID        string
	SessionID int64
	// Created is the committed session when the payload is SessionCreated.
	Created *domain.Node
	// Updated is the committed session when the payload is SessionUpdated.
	Updated *domain.Node
	// Deleted is set when the payload is SessionDeleted; SessionID is then
	// the deleted session.
	Deleted bool
}

// ApplySessionEvent folds a lifecycle event into the graph. Delivery is at
// least once, so each event id is applied at most once.
type ApplySessionEvent struct{ repo NodeRepository }

// NewApplySessionEvent returns the use case over repo.
func NewApplySessionEvent(repo NodeRepository) ApplySessionEvent {
	return ApplySessionEvent{repo: repo}
}

// Handle applies ev and reports false when ev had been applied before (a
// redelivery), in which case nothing changed.
//
// Created and updated both store the snapshot, the newer by updated_at
// winning. Deleted drops the node and every uncle edge touching it, both
// ways; nothing else is rewritten, so its children keep the parent id they
// recorded and walks simply no longer find the deleted node. A deleted
// session stays deleted: a snapshot of it that arrives late is ignored.
func (uc ApplySessionEvent) Handle(ctx context.Context, ev SessionEvent) (applied bool, err error) {
	switch {
	case ev.ID == "":
		return false, validation.Invalid("event.event_id", "missing; it is the idempotency key")
	case uuid.Validate(ev.ID) != nil:
		return false, validation.Invalid("event.event_id", "must be a UUID")
	}

	// payload names the event's kind as SessionEvent's payload does; the
	// inbox records it as the event's topic. Lineage reads lifecycle's
	// events by their payload, so it keeps no copy of lifecycle's topics.
	var (
		payload string
		apply   func(context.Context, NodeWriter) error
	)
	switch {
	case ev.Created != nil || ev.Updated != nil:
		node := ev.Created
		payload = "created"
		if node == nil {
			payload, node = "updated", ev.Updated
		}
		n := *node
		// Name the field as the caller sent it: event.<payload>.session.<field>.
		var invalid *validation.Error
		if errors.As(n.Validate(), &invalid) {
			return false, invalid.Nested("event." + payload)
		}
		if ev.SessionID != 0 && ev.SessionID != n.SessionID {
			return false, validation.Invalid("event.session_id", "is %d but the %s session is %d", ev.SessionID, payload, n.SessionID)
		}
		apply = func(ctx context.Context, w NodeWriter) error { return w.Save(ctx, n) }
	case ev.Deleted:
		if ev.SessionID <= 0 {
			return false, validation.Invalid("event.deleted.session_id", "must be a positive session id")
		}
		payload = "deleted"
		apply = func(ctx context.Context, w NodeWriter) error { return w.Delete(ctx, ev.SessionID) }
	default:
		return false, validation.Invalid("event.payload", "missing or unknown to lineage; want created, updated or deleted")
	}

	applied, err = uc.repo.ApplyEvent(ctx, ev.ID, payload, apply)
	if err != nil {
		return false, fmt.Errorf("apply event %s: %w", ev.ID, err)
	}
	return applied, nil
}
