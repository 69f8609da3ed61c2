package domain

import (
	"context"
	"fmt"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// Pick says which pending message a delivery claims.
type Pick struct {
	// MessageID names the message (send now, interrupt); 0 claims the
	// first pending one.
	MessageID int64
	// HandedOverFrom is the turn a turn-end drain hands over from; it is
	// recorded on the message so a retried drain finds the same one. Not
	// when the message turns out to have become that very turn (lifecycle
	// made it before and the answer was lost): it is sent, but it does not
	// follow the turn, and the drain goes on to the next message.
	HandedOverFrom string
}

// Send makes a claimed message a turn and returns the turn's job id. It
// runs while the message is claimed under a lease, with no transaction
// open, before the lease's deadline. ok false means the session cannot take
// the message now: the claim is released and the message is pending as it
// was. An error releases it too.
type Send func(ctx context.Context, m Message) (jobID string, ok bool, err error)

// DeliveryID names a message's delivery to lifecycle, which applies a
// delivery id once: however often a claim of the message is retried, it
// becomes one turn.
func DeliveryID(m Message) string { return fmt.Sprintf("queue/message/%d", m.ID) }

// FollowUpDeliveryID names a follow-up delivered without being queued; key
// is the caller's idempotency key, or a fresh one.
func FollowUpDeliveryID(sessionID int64, key string) string {
	return fmt.Sprintf("queue/follow_up/%d/%s", sessionID, key)
}

// FollowUpIdempotencyKey is the key a follow-up that had to be queued is
// queued under, so the caller's retry finds it instead of queueing twice.
func FollowUpIdempotencyKey(key string) string { return "follow_up:" + key }

// DrainAfterPause says whether a pause needs the after-pause drain
// (lifecycle's drain_enqueued_messages_after_pause): only when it left the
// session at rest awake (statusAfter needs_input — a pause that went
// straight to sleep leaves the queue to the wake's turn, which hands it
// over) and a message waits for it (pending: one being delivered already
// has its deliverer). Anything else would start a workflow that waits, finds
// nothing and ends — on every idle session's every pause.
func DrainAfterPause(statusAfter string, pending int64) bool {
	return statusAfter == rules.StatusNeedsInput && pending > 0
}
