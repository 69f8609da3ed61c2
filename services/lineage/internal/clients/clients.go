// Package clients holds lineage's outbound adapters to other contexts.
package clients

import (
	"context"
	"fmt"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/events"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
)

// ConsumerDeliverer hands lineage's events to a context that implements
// LineageEventConsumerService. It reports the consumer's status as is; the
// relay classifies it (outbox.Relay).
type ConsumerDeliverer struct {
	Client lineagev1.LineageEventConsumerServiceClient
}

// Deliver implements outbox.DeliverFunc.
func (d ConsumerDeliverer) Deliver(ctx context.Context, m outbox.Message) error {
	evt, err := events.Decode(m.Payload)
	if err != nil {
		// No retry makes a stored payload decode.
		return outbox.Reject(err)
	}
	if _, err := d.Client.ConsumeLineageEvent(ctx, &lineagev1.ConsumeLineageEventRequest{Event: evt}); err != nil {
		return fmt.Errorf("deliver %s %s to %s: %w", m.Topic, m.ID, m.Subscriber, err)
	}
	return nil
}
