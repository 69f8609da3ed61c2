package outbox

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/platform/alert"
)

// DeadLetterAlert is a Relay.OnDead for any producing service: a message
// parked as dead always pages, whatever its topic, since nothing will retry
// it. The key names the subscriber and the topic (which names the
// producer), so a consumer that refuses a whole kind of event is one page
// (counted by notification), not one per aggregate.
func DeadLetterAlert(producer string, r alert.Raiser, logger *slog.Logger) func(context.Context, Message, error) {
	return func(ctx context.Context, m Message, derr error) {
		alert.Raise(ctx, r, logger, "outbox_dead_letter/"+m.Subscriber+"/"+m.Topic,
			fmt.Sprintf("%s event %s for %s was parked as dead after %d attempts: %v", producer, m.Topic, m.Subscriber, m.Attempts+1, derr),
			map[string]any{"producer": producer, "subscriber": m.Subscriber, "topic": m.Topic, "event_id": m.ID,
				"aggregate_key": m.AggregateKey, "attempts": m.Attempts + 1, "error": derr.Error()})
	}
}
