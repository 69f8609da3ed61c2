package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/queue/internal/config"
)

// The race the turn-end hand-over cannot cover: its drain finds the queue
// empty, a message is enqueued, and only then does the pause commit. The
// pause's drain effect (and the enqueue's own poke) start the after-pause
// drain on Temporal, which delivers the message to the session now at rest.
func TestAMessageEnqueuedBetweenTheTurnEndDrainAndThePauseIsDelivered(t *testing.T) {
	t.Parallel()
	addr := servicetest.TemporalAddress(t)
	namespace := servicetest.TemporalNamespace(t, addr)
	h := startHarnessWith(t, func(c *config.Config) {
		c.TemporalAddress, c.TemporalNamespace = addr, namespace
		c.DrainDelay = time.Second
	}, roster()...)

	// The turn job-2 ends: nothing queued, nothing handed over.
	resp, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: "job-2"})
	require.NoError(t, err)
	require.False(t, resp.GetDelivered())

	// In the window: a message arrives while the session still reads running.
	m := h.enqueue(t, 2, "arrived in the window")

	// The pause commits and its drain effect is delivered.
	h.lifecycle.setStatus(2, rules.StatusNeedsInput)
	drain := drainEffect("needs_input")
	drain.Alerting = true
	_, err = h.consumer.ConsumeSessionEvent(t.Context(), &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
		EventId: "pause-2", SessionId: 2,
		Payload: &lifecyclev1.SessionEvent_Effect{Effect: drain},
	}})
	require.NoError(t, err)

	require.Eventually(t, func() bool { return h.messages(t, 2)[m.GetId()].GetStatus() == "sent" },
		20*time.Second, 100*time.Millisecond, "the after-pause drain never delivered the message")
	delivered := h.deliveriesTo(2)
	require.Len(t, delivered, 1, "delivered once")
	require.Equal(t, "DELIVERY_MODE_IDLE", delivered[0].Mode.String(), "to the session at rest")
	require.Equal(t, rules.StatusRunning, h.lifecycle.session(2).Status, "and it runs again")
}
