// Package clients holds lifecycle's outbound adapters to other contexts.
package clients

import (
	"context"
	"fmt"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
)

// LineageDeliverer hands lifecycle events to the lineage context.
type LineageDeliverer struct {
	Client lineagev1.LineageServiceClient
}

// Deliver implements outbox.DeliverFunc. Lineage applies events
// idempotently, so a redelivery after a crash is harmless.
func (d LineageDeliverer) Deliver(ctx context.Context, m outbox.Message) error {
	evt, err := events.Decode(m.Payload)
	if err != nil {
		return err
	}
	if _, err := d.Client.ApplySessionEvent(ctx, &lineagev1.ApplySessionEventRequest{Event: evt}); err != nil {
		return fmt.Errorf("deliver %s %s to lineage: %w", m.Topic, m.ID, err)
	}
	return nil
}
