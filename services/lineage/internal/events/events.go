// Package events encodes the lineage context's domain events as the
// protobuf messages other contexts consume, and names who consumes them.
package events

import (
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
)

// SubscriberLifecycle is lifecycle, which owns the sessions' timelines.
const SubscriberLifecycle = "lifecycle"

// TopicUncleEdgeChanged is the topic of domain.UncleEdgeChanged.
const TopicUncleEdgeChanged = "lineage.uncle_edge_changed"

// TimelineKindNote is the timeline's kind for a change that is not a
// transition, in lifecycle's vocabulary, which the timeline speaks.
const TimelineKindNote = "note"

// EncodeUncleEdgeChanged turns c into the event lifecycle writes on both
// sessions' timelines. The aggregate is the target: the session whose
// seniors changed.
//
// A withdrawal (a retraction of a failed delivery's edge) travels as the
// same event with outcome UNSPECIFIED: the wire's outcome names only what
// recording did, and a withdrawn edge must not read as one written. Its
// lines say what was undone.
func EncodeUncleEdgeChanged(c domain.UncleEdgeChanged) (outbox.Addressed, error) {
	outcome := lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN
	switch c.Outcome {
	case domain.UncleWritten:
	case domain.UncleInverted:
		outcome = lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_INVERTED
	default:
		return outbox.Addressed{}, fmt.Errorf("uncle edge outcome %s changes nothing to announce", c.Outcome)
	}
	if c.Withdrawn {
		outcome = lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_UNSPECIFIED
	}
	lines := make([]*lineagev1.SessionTimelineLine, len(c.Lines))
	for i, l := range c.Lines {
		lines[i] = &lineagev1.SessionTimelineLine{SessionId: l.SessionID, Kind: TimelineKindNote, Message: l.Message}
	}
	id := uuid.NewString()
	payload, err := proto.Marshal(&lineagev1.LineageEvent{
		EventId:    id,
		OccurredAt: timestamppb.New(c.At),
		Payload: &lineagev1.LineageEvent_UncleEdgeChanged{UncleEdgeChanged: &lineagev1.UncleEdgeChanged{
			Outcome:         outcome,
			ActingSessionId: c.Edge.UncleSessionID,
			TargetSessionId: c.Edge.SessionID,
			EntryPoint:      c.Edge.EntryPoint,
			Lines:           lines,
		}},
	})
	if err != nil {
		return outbox.Addressed{}, fmt.Errorf("encode %s: %w", TopicUncleEdgeChanged, err)
	}
	return outbox.Addressed{
		Event: outbox.Event{
			ID:           id,
			Topic:        TopicUncleEdgeChanged,
			AggregateKey: strconv.FormatInt(c.Edge.SessionID, 10),
			Payload:      payload,
		},
		Subscribers: []string{SubscriberLifecycle},
	}, nil
}

// Decode reads a stored event back.
func Decode(payload []byte) (*lineagev1.LineageEvent, error) {
	var e lineagev1.LineageEvent
	if err := proto.Unmarshal(payload, &e); err != nil {
		return nil, fmt.Errorf("decode lineage event: %w", err)
	}
	return &e, nil
}
