package domain

import "fmt"

// The queue's timeline lines, written once here: the code writes them and
// the tests read the same words.
const (
	// LineEnqueued: a message joined the session's queue (the message's
	// id and its position).
	LineEnqueued = "[Queue] message #%d queued at position %d"
	// LineEnqueuedBy follows LineEnqueued when a session queued it.
	LineEnqueuedBy = " by session #%d"
)

// EnqueuedLine is the timeline line of m's enqueue: every enqueue says so
// on the session's timeline, as the original does.
func EnqueuedLine(m Message) string {
	line := fmt.Sprintf(LineEnqueued, m.ID, m.Position)
	if m.ActingSessionID != 0 {
		line += fmt.Sprintf(LineEnqueuedBy, m.ActingSessionID)
	}
	return line
}
