package domain

import (
	"fmt"
	"strings"
)

// The queue's words, each written once: what its answers and its part of
// the archive line say. Where the spec quotes them (session-lifecycle.md,
// "Archiving retires the message queue" and "Archiving over a queued
// message is refused"), they are the spec's to the letter; tests compare
// with these.

// FollowUpQueuedMessage is what a follow-up onto a running session answers
// (the spec's words: a promise, which the queue keeps or records the loss
// of).
const FollowUpQueuedMessage = "Message queued (session is running). It will be sent when the agent completes its current task."

// RetirementAlertTitle is the retirement alert's title (its details'
// "title"): what an operator reads before the summary.
const RetirementAlertTitle = "Queued messages discarded by an archive"

// ArchiveRefusal is the archive guard's refusal over a session's live
// queue, in delivery order: the messages numbered, what to do instead, and
// force named last, because force is the exception (session-lifecycle.md,
// "Archiving over a queued message is refused"). "" when queue is empty:
// the archive may go ahead.
func ArchiveRefusal(sessionID int64, queue []Message) string {
	if len(queue) == 0 {
		return ""
	}
	one := len(queue) == 1
	var b strings.Builder
	fmt.Fprintf(&b, "Cannot archive session %d: %s. Archiving discards %s.\n\n",
		sessionID, plural(one, "1 queued message has not been delivered", fmt.Sprintf("%d queued messages have not been delivered", len(queue))),
		plural(one, "it", "them"))
	for i, m := range queue {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, Preview(m.Content, RefusalPreviewChars))
	}
	fmt.Fprintf(&b, "\nDo not archive. If you are this session, end your turn instead — %s "+
		"as your next turn, and archiving after that succeeds because the queue is empty. "+
		"If you are archiving another session, leave it alone and let it consume what you sent it.\n\n",
		plural(one, "the queued message is delivered", "the queued messages are delivered in order, the first"))
	fmt.Fprintf(&b, "Only if you have read the %s above and are deliberately discarding %s: "+
		"re-call with \"force\": true. That is not the recommended path — %s accepted from someone who "+
		"was told %s would be delivered, and forcing throws %s away.",
		plural(one, "message", "messages"), plural(one, "it", "them"),
		plural(one, "the message was", "the messages were"), plural(one, "it", "they"), plural(one, "it", "them"))
	return b.String()
}

// RetirementClause is what the archive line adds after its actor when the
// archive retired messages: how many, and a preview of each. "" when none
// were retired.
func RetirementClause(retired []Message) string {
	if len(retired) == 0 {
		return ""
	}
	previews := make([]string, len(retired))
	for i, m := range retired {
		previews[i] = fmt.Sprintf("%q", Preview(m.Content, RetirementPreviewChars))
	}
	if len(retired) == 1 {
		return " — 1 queued message was never delivered and is now marked undelivered: " + previews[0]
	}
	return fmt.Sprintf(" — %d queued messages were never delivered and are now marked undelivered: %s",
		len(retired), strings.Join(previews, ", "))
}

// Enqueued is what an enqueue answers: where the message waits, and when
// it is sent.
func Enqueued(m Message) string {
	return fmt.Sprintf("Message %d queued for session %d at position %d; it is sent when the session is next idle.", m.ID, m.SessionID, m.Position)
}

// AlreadyEnqueued answers an enqueue retried with its idempotency key.
func AlreadyEnqueued(m Message) string {
	return fmt.Sprintf("Message %d was already queued with this idempotency_key; nothing new was queued.", m.ID)
}

// FollowUpDelivered answers a follow-up that became the turn of the idle
// session sessionID.
func FollowUpDelivered(sessionID int64) string {
	return fmt.Sprintf("Follow-up delivered: it is session %d's turn now.", sessionID)
}

// FollowUpInterrupted answers a forced follow-up that interrupted the
// running turn and became the next.
func FollowUpInterrupted(sessionID int64) string {
	return fmt.Sprintf("The running turn was interrupted; the follow-up is session %d's turn now.", sessionID)
}

// FollowUpQueuedUninterrupted answers a forced follow-up whose interrupt
// failed: queued all the same, in the spec's promise.
func FollowUpQueuedUninterrupted(sessionID, messageID int64) string {
	return fmt.Sprintf("Message queued: session %d's running turn could not be interrupted now, "+
		"so it will be sent when the agent completes its current task. To try again, interrupt with message %d.", sessionID, messageID)
}

// NextInLineMessage says that the interrupt with message m halted nothing:
// the turn it was asked to halt had already given way to another (an
// earlier interrupt's message, a hand-over), which runs whole, and m is
// first in line behind it.
func NextInLineMessage(m Message) string {
	return fmt.Sprintf("Message %d is first in line: the turn it was to interrupt had already given way to another "+
		"(an earlier interrupt's message, or the next queued one), which runs to its end; session %d takes message %d as soon as it does.",
		m.ID, m.SessionID, m.ID)
}

// The queue's timeline lines.
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
