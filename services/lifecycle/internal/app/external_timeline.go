package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// ExternalTimelineWriter appends the lines other contexts announce.
type ExternalTimelineWriter interface {
	// AppendExternalLines claims eventID in the inbox and, in the same
	// transaction, appends lines dated at, in order. When the event was
	// claimed before it returns false and writes nothing. A line for a
	// session that no longer exists is skipped: its timeline went with it.
	AppendExternalLines(ctx context.Context, eventID, topic string, at time.Time, lines []domain.ExternalTimelineLine) (applied bool, err error)
}

// ExternalTimelineEvent is another context's event carrying lines for
// sessions' timelines, translated from the wire.
type ExternalTimelineEvent struct {
	// ID is the producer's event id (a UUID): the idempotency key.
	ID string
	// Topic names the kind of event, as the inbox records it.
	Topic string
	// Payload names the wire payload, for the fields of a refusal
	// (event.<payload>.lines[i].<field>).
	Payload string
	// At is when the event happened; zero means now.
	At    time.Time
	Lines []domain.ExternalTimelineLine
}

// AppendExternalTimelineLines writes what another context announced on the
// sessions' timelines, so that what it did to a session is read where the
// session's history is read: lineage's uncle-edge outcomes, on both
// sessions. Delivery is at least once, so each event is applied once.
type AppendExternalTimelineLines struct {
	Repo  ExternalTimelineWriter
	Clock clock.Clock
}

// Handle validates ev and appends its lines, reporting false when ev had
// been applied before (a redelivery), in which case nothing changed.
func (uc AppendExternalTimelineLines) Handle(ctx context.Context, ev ExternalTimelineEvent) (bool, error) {
	switch {
	case ev.ID == "":
		return false, validation.Invalid("event.event_id", "missing; it is the idempotency key")
	case uuid.Validate(ev.ID) != nil:
		return false, validation.Invalid("event.event_id", "must be a UUID")
	case len(ev.Lines) == 0:
		return false, validation.Invalid(fmt.Sprintf("event.%s.lines", ev.Payload), "missing; the event writes nothing")
	}
	var vs validation.Violations
	for i, l := range ev.Lines {
		var invalid *validation.Error
		if errors.As(l.Validate(), &invalid) {
			vs = append(vs, invalid.Nested(fmt.Sprintf("event.%s.lines[%d]", ev.Payload, i)).Violations...)
		}
	}
	if err := vs.Err(); err != nil {
		return false, err
	}
	at := ev.At
	if at.IsZero() {
		at = uc.Clock.Now()
	}
	applied, err := uc.Repo.AppendExternalLines(ctx, ev.ID, ev.Topic, at, ev.Lines)
	if err != nil {
		return false, fmt.Errorf("append the timeline lines of event %s: %w", ev.ID, err)
	}
	return applied, nil
}
