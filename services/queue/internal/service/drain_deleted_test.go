package service_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/queue/internal/config"
)

// A drain whose session was hard-deleted ends at its first attempt:
// lifecycle's NotFound is no failed attempt to retry (queue-drain-<id>
// retried it about six times over 2.5 minutes, issue 20 item 14). Its
// messages go undelivered, and the page says why.
func TestADrainOfADeletedSessionEndsAtOnce(t *testing.T) {
	t.Parallel()
	addr := servicetest.TemporalAddress(t)
	namespace := servicetest.TemporalNamespace(t, addr)
	h := startHarnessWith(t, func(c *config.Config) {
		c.TemporalAddress, c.TemporalNamespace = addr, namespace
		c.DrainDelay = time.Second
	}, roster()...)

	// Queued behind session 2's running turn; then the session is
	// deleted, and the pause's drain effect arrives for it.
	m := h.enqueue(t, 2, "never to be delivered")
	gone := h.lifecycle.remove(2)
	before := len(h.log.with("lifecycle.RecordDrainAttempt"))
	require.NoError(t, h.effect(t, 2, "drain_enqueued_messages_after_pause", map[string]any{"status_after": "needs_input"}))

	key := "queue_messages_retired/2"
	require.Eventually(t, func() bool {
		for _, a := range h.notification.raised() {
			if a.GetDedupKey() == key {
				return true
			}
		}
		return false
	}, 15*time.Second, 100*time.Millisecond, "the deleted session's messages were never retired")
	time.Sleep(2 * time.Second) // a retry would come AttemptInterval later; none may come at all
	attempts := 0
	for _, line := range h.log.with("lifecycle.RecordDrainAttempt")[before:] {
		if strings.HasSuffix(line, " 2") {
			attempts++
		}
	}
	require.Equal(t, 1, attempts, "one attempt, no retry of NotFound")
	for _, a := range h.notification.raised() {
		require.NotContains(t, a.GetDedupKey(), "queue_drain_exhausted", "a deleted session is not an exhausted drain")
		if a.GetDedupKey() == key {
			require.Contains(t, a.GetSummary(), "Session 2 was deleted, so nothing can deliver its queue")
			require.Contains(t, a.GetSummary(), "never to be delivered")
		}
	}

	// Read back through the queue's own API (which resolves the session
	// through lifecycle): the message is undelivered, not pending.
	gone.Status = rules.StatusArchived
	h.lifecycle.put(gone)
	require.Equal(t, "undelivered", h.messages(t, 2)[m.GetId()].GetStatus())
}
