package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
)

// TopicSessionCreated is the inbox topic of lifecycle's SessionCreated,
// matching the topic lifecycle's outbox uses.
const TopicSessionCreated = "lifecycle.session_created"

// SessionEvent is one lifecycle event, translated from the wire.
type SessionEvent struct {
	// ID is the producer's event id (a UUID): the idempotency key.
	ID        string
	SessionID int64
	// Created is the committed session when the payload is SessionCreated;
	// nil when the payload is missing or one lineage does not know.
	Created *domain.Node
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
func (uc ApplySessionEvent) Handle(ctx context.Context, ev SessionEvent) (applied bool, err error) {
	switch {
	case ev.ID == "":
		return false, &domain.ValidationError{Field: "event.event_id", Reason: "missing; it is the idempotency key"}
	case uuid.Validate(ev.ID) != nil:
		return false, &domain.ValidationError{Field: "event.event_id", Reason: "must be a UUID"}
	case ev.Created == nil:
		return false, &domain.ValidationError{Field: "event.payload", Reason: "missing or unknown to lineage; want created"}
	}
	node := *ev.Created
	// Name the field as the caller sent it: event.created.session.<field>.
	var invalid *domain.ValidationError
	if errors.As(node.Validate(), &invalid) {
		return false, &domain.ValidationError{Field: "event.created." + invalid.Field, Reason: invalid.Reason}
	}
	if ev.SessionID != 0 && ev.SessionID != node.SessionID {
		return false, &domain.ValidationError{
			Field:  "event.session_id",
			Reason: fmt.Sprintf("is %d but the created session is %d", ev.SessionID, node.SessionID),
		}
	}
	applied, err = uc.repo.ApplyEvent(ctx, ev.ID, TopicSessionCreated, func(ctx context.Context, w NodeWriter) error {
		return w.Save(ctx, node)
	})
	if err != nil {
		return false, fmt.Errorf("apply event %s: %w", ev.ID, err)
	}
	return applied, nil
}
