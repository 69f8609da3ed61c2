// Package domain is the queue's rules about enqueued messages: what a valid
// message is, how a session's queue is reordered, what the archive guard
// says when it refuses, what the archive line says about retired messages,
// and which retirements page. It is pure: no I/O, the time is passed in.
package domain

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// A message's content becomes a turn's prompt and its goal the session's
// goal, so they share the session's limits rather than having their own.
const (
	MaxContentChars        = rules.MaxPromptChars
	MaxGoalChars           = rules.MaxGoalChars
	MaxIdempotencyKeyChars = 255
)

// Status is where a message is on its way to the agent.
type Status string

// A message is pending until one deliverer claims it (processing), then sent;
// a failed delivery puts it back to pending. Undelivered is terminal: the
// session was archived while the message was still queued.
const (
	StatusPending     Status = "pending"
	StatusProcessing  Status = "processing"
	StatusSent        Status = "sent"
	StatusUndelivered Status = "undelivered"
)

// Origin is who wrote a message: a caller, or Zimmer itself (an automated
// notice). No request sets it; the use case that enqueues does.
type Origin string

// The origins Zimmer writes. Automated notices are "automated_<notice>".
const (
	OriginCaller                 Origin = "caller"
	OriginAutomatedPRMerged      Origin = "automated_pr_merged"
	OriginAutomatedMergeConflict Origin = "automated_merge_conflict"
)

// Automated says whether Zimmer wrote the message on its own behalf.
func (o Origin) Automated() bool { return strings.HasPrefix(string(o), "automated_") }

// Message is one enqueued message.
type Message struct {
	ID              int64
	SessionID       int64
	Position        int // 1 is delivered first; meaningful while pending or processing
	Status          Status
	Origin          Origin
	ActingSessionID int64 // 0: no session enqueued it
	Content         string
	Goal            string // "": the session keeps its goal
	IdempotencyKey  string // "": the caller gave none
	CreatedAt       time.Time
	UpdatedAt       time.Time
	ClaimedAt       time.Time
	SentAt          time.Time
	UndeliveredAt   time.Time
	// UndeliveredReason says why an undelivered message never became a
	// turn (one of the Reason* texts).
	UndeliveredReason string
	// DeliveredJobID is the turn a sent message became (the session's
	// running_job_id for it).
	DeliveredJobID string
}

// Live says whether the message still holds a place in its session's queue.
func (m Message) Live() bool { return m.Status == StatusPending || m.Status == StatusProcessing }

// Why a message ended undelivered (Message.UndeliveredReason).
const (
	ReasonArchived    = "the session was archived while the message was queued"
	ReasonSessionGone = "the session no longer exists (it was deleted) while the message was queued"
	ReasonBlank       = "its content is blank (only white space), and a turn's prompt must carry text"
)

// Undeliverable says why m can never become a turn, or "" when it can: a
// blank content (queued before blank text was refused) is a prompt no turn
// runs, so it would otherwise wait in the queue for ever.
func (m Message) Undeliverable() string {
	if validation.Blank(m.Content) {
		return ReasonBlank
	}
	return ""
}

// UndeliverableError is a claimed message that can never become a turn:
// the delivery marks it undelivered with the reason instead of sending it.
type UndeliverableError struct {
	MessageID int64
	Reason    string
}

func (e *UndeliverableError) Error() string {
	return fmt.Sprintf("message %d can never be delivered: %s; it is now marked undelivered", e.MessageID, e.Reason)
}

// CheckDeliverable is the *UndeliverableError of a message that can never
// become a turn, or nil. A Send calls it before it sends.
func CheckDeliverable(m Message) error {
	if r := m.Undeliverable(); r != "" {
		return &UndeliverableError{MessageID: m.ID, Reason: r}
	}
	return nil
}

// NewMessage is what a request to enqueue carries; the position is the
// queue's to assign (the end of the queue).
type NewMessage struct {
	SessionID       int64
	Origin          Origin
	ActingSessionID int64
	Content         string
	Goal            string
	IdempotencyKey  string
}

// Validate lists everything wrong with n, so a caller fixes it in one round
// trip.
func (n NewMessage) Validate() error {
	var vs validation.Violations
	if n.SessionID <= 0 {
		vs.Add("session_id", "must be a positive session id")
	}
	CheckActing(&vs, n.ActingSessionID)
	if !validOrigin(n.Origin) {
		vs.Add("origin", "must be %q or %q followed by a notice name", OriginCaller, "automated_")
	}
	checkContent(&vs, n.Content)
	checkText(&vs, "goal", n.Goal, MaxGoalChars)
	checkText(&vs, "idempotency_key", n.IdempotencyKey, MaxIdempotencyKeyChars)
	return vs.Err()
}

// CheckActing refuses an acting session id no session can have (0 is
// none declared).
func CheckActing(vs *validation.Violations, id int64) {
	if id < 0 {
		vs.Add("acting_session_id", "must be a positive session id, or absent")
	}
}

// CheckPick refuses what names no message of a queue: a send-now or an
// interrupt names the message it sends, by its id.
func CheckPick(vs *validation.Violations, messageID, actingID int64) {
	if messageID <= 0 {
		vs.Add("message_id", "must be a queued message's id (a positive number); list the session's queue for its ids")
	}
	CheckActing(vs, actingID)
}

// Edit is a change to a pending message's text; nil fields stay as they are.
type Edit struct {
	Content *string
	Goal    *string
}

// Validate lists everything wrong with e.
func (e Edit) Validate() error {
	var vs validation.Violations
	if e.Content != nil {
		if *e.Content == "" {
			vs.Add("content", "must not be empty; delete the message instead")
		} else {
			checkContent(&vs, *e.Content)
		}
	}
	if e.Goal != nil {
		checkText(&vs, "goal", *e.Goal, MaxGoalChars)
	}
	return vs.Err()
}

func validOrigin(o Origin) bool {
	if o == OriginCaller {
		return true
	}
	name, ok := strings.CutPrefix(string(o), "automated_")
	if !ok || name == "" {
		return false
	}
	for _, part := range strings.Split(name, "_") {
		if part == "" {
			return false
		}
		for _, r := range part {
			if r < 'a' || r > 'z' {
				return false
			}
		}
	}
	return true
}

// checkText is platform/validation's text rule, in the words every context
// uses.
func checkText(vs *validation.Violations, field, v string, limit int) { vs.Text(field, v, limit, "") }

// checkContent is the rule for a message's content: it becomes a turn's
// prompt, so it must carry text (platform/validation's Content, the rule
// lifecycle holds a prompt to).
func checkContent(vs *validation.Violations, content string) {
	vs.Content("content", content, MaxContentChars, true, "it becomes the turn's prompt", "")
}

// Preview is s cut to at most limit characters, ending in "..." when cut,
// with line breaks folded to spaces so it fits on one line.
func Preview(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	runes := []rune(s)
	return strings.TrimRight(string(runes[:max(limit-3, 0)]), " ") + "..."
}

// Reorder moves the message id to position to (1-based) in a queue given
// in delivery order, and returns the new order; every other message keeps
// its relative place, so positions stay 1..n without gaps.
func Reorder(order []int64, id int64, to int) ([]int64, error) {
	from := -1
	for i, x := range order {
		if x == id {
			from = i
		}
	}
	if from < 0 {
		return nil, fmt.Errorf("message %d is not pending in this queue", id)
	}
	if to < 1 || to > len(order) {
		return nil, validation.Invalid("position", "must be between 1 and %d, the queue's length", len(order))
	}
	out := make([]int64, 0, len(order))
	for _, x := range order {
		if x != id {
			out = append(out, x)
		}
	}
	out = append(out[:to-1], append([]int64{id}, out[to-1:]...)...)
	return out, nil
}
