// Package events encodes the lifecycle context's domain events as the
// protobuf messages other contexts consume, and names who consumes them.
package events

import (
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
)

// Subscribers of lifecycle events.
const SubscriberLineage = "lineage"

// Topics.
const (
	TopicSessionCreated = "lifecycle.session_created"
	TopicSessionUpdated = "lifecycle.session_updated"
	TopicSessionDeleted = "lifecycle.session_deleted"
)

// Encode implements store.EventEncoder.
func Encode(e domain.Fact) (outbox.Event, []string, error) {
	switch e := e.(type) {
	case domain.SessionCreated:
		s, err := wire.Session(e.Session)
		if err != nil {
			return outbox.Event{}, nil, err
		}
		return build(TopicSessionCreated, e.Session, &lifecyclev1.SessionEvent{
			Payload: &lifecyclev1.SessionEvent_Created{Created: &lifecyclev1.SessionCreated{Session: s}},
		}, SubscriberLineage)
	case domain.SessionTransitioned:
		s, err := wire.Session(e.Session)
		if err != nil {
			return outbox.Event{}, nil, err
		}
		return build(TopicSessionUpdated, e.Session, &lifecyclev1.SessionEvent{
			Payload: &lifecyclev1.SessionEvent_Updated{Updated: &lifecyclev1.SessionUpdated{Session: s}},
		}, SubscriberLineage)
	case domain.SessionDeleted:
		return build(TopicSessionDeleted, domain.Session{ID: e.SessionID, UpdatedAt: time.Now().UTC()}, &lifecyclev1.SessionEvent{
			Payload: &lifecyclev1.SessionEvent_Deleted{Deleted: &lifecyclev1.SessionDeleted{SessionId: e.SessionID}},
		}, SubscriberLineage)
	default:
		return outbox.Event{}, nil, fmt.Errorf("no encoding for event %T", e)
	}
}

func build(topic string, s domain.Session, msg *lifecyclev1.SessionEvent, subscribers ...string) (outbox.Event, []string, error) {
	msg.EventId = uuid.NewString()
	msg.SessionId = s.ID
	msg.OccurredAt = timestamppb.New(s.UpdatedAt)
	payload, err := proto.Marshal(msg)
	if err != nil {
		return outbox.Event{}, nil, fmt.Errorf("marshal %s: %w", topic, err)
	}
	return outbox.Event{
		ID:           msg.EventId,
		Topic:        topic,
		AggregateKey: strconv.FormatInt(s.ID, 10),
		Payload:      payload,
	}, subscribers, nil
}

// Decode reads an outbox payload back into the event message.
func Decode(payload []byte) (*lifecyclev1.SessionEvent, error) {
	var msg lifecyclev1.SessionEvent
	if err := proto.Unmarshal(payload, &msg); err != nil {
		return nil, fmt.Errorf("decode session event: %w", err)
	}
	return &msg, nil
}
