package domain

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Elicitation is the question a session's agent is blocked on (an MCP
// elicitation), as the runner reported it with block_on_elicitation. It is
// kept while the block lasts, so an answer can be checked against it.
type Elicitation struct {
	// ID is the agent's request id; an answer names it.
	ID string
	// TurnID is the running job whose agent asked: the answer goes to it.
	TurnID  string
	Message string
	// RequestedSchema is the JSON Schema the answer's content must match
	// (CheckElicitationContent).
	RequestedSchema map[string]any
	RequestedAt     time.Time
	// ExpiresAt is when the agent stops waiting; zero when it did not say.
	ExpiresAt time.Time
}

// LostElicitation is the banner of a question that went unanswered
// (session-lifecycle.md: a stranded needs_input session "gets a
// lost_elicitation marker naming what happened").
type LostElicitation struct {
	// Reason is LostExpired or LostStranded.
	Reason    string
	RequestID string
	// Summary is what was asked, cut to MaxLostSummaryRunes.
	Summary string
	LostAt  time.Time
}

// The answers an agent can take and what else can become of an
// elicitation (an unblock's outcome): rules', which the runner reports in.
const (
	ElicitAccept  = rules.ElicitAccept
	ElicitDecline = rules.ElicitDecline
	ElicitCancel  = rules.ElicitCancel
	LostExpired   = rules.ElicitationExpired
	LostStranded  = rules.ElicitationStranded
)

// MaxLostSummaryRunes bounds a lost elicitation's summary.
const MaxLostSummaryRunes = 200

// maxElicitationIDChars bounds an elicitation id (the agent's own).
const maxElicitationIDChars = 255

// lose returns the banner of e lost for reason at now.
func lose(e *Elicitation, reason string, now time.Time) *LostElicitation {
	lost := &LostElicitation{Reason: reason, LostAt: now}
	if e != nil {
		lost.RequestID = e.ID
		lost.Summary = clipRunes(strings.Join(strings.Fields(e.Message), " "), MaxLostSummaryRunes)
	}
	return lost
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// ValidateElicitationOutcome checks an unblock's outcome.
func ValidateElicitationOutcome(outcome string) error {
	switch outcome {
	case "", ElicitAccept, ElicitDecline, ElicitCancel, LostExpired, LostStranded:
		return nil
	}
	return validation.Invalid("elicitation_outcome", "must be one of accept, decline, cancel, expired, stranded (or empty), got %q", outcome)
}

// ElicitationAnswer is a human's (or an operator's) answer to the
// elicitation a session is blocked on.
type ElicitationAnswer struct {
	Action string
	// Content is the answer with accept; nil otherwise.
	Content map[string]any
}

// PendingElicitation returns the elicitation s's agent is blocked on, or
// nil: only a needs_input session blocked on one has it.
func PendingElicitation(s Session) *Elicitation {
	if s.Status != StatusNeedsInput || !s.Markers.BlockedOnElicitation {
		return nil
	}
	return s.Markers.Elicitation
}

// CheckElicitationAnswer decides whether answer may go to the agent of s
// as the answer to elicitation id: s must be blocked on that elicitation,
// and the answer must be one of the actions, with content matching the
// requested schema exactly when it accepts. It returns the elicitation
// answered.
func CheckElicitationAnswer(s Session, id string, answer ElicitationAnswer) (Elicitation, error) {
	var vs validation.Violations
	switch answer.Action {
	case ElicitAccept:
	case ElicitDecline, ElicitCancel:
		if answer.Content != nil {
			vs.Add("content", "is sent only with accept; leave it out to %s", answer.Action)
		}
	case "":
		vs.Add("action", "is required: accept (with content), decline or cancel")
	default:
		vs.Add("action", "must be accept, decline or cancel, got %q", answer.Action)
	}
	if err := vs.Err(); err != nil {
		return Elicitation{}, err
	}
	if s.Status == StatusArchived {
		return Elicitation{}, &PreconditionError{Reason: fmt.Sprintf(
			"session #%d is archived: its agent is not waiting for an answer any more", s.ID)}
	}
	e := PendingElicitation(s)
	switch {
	case e == nil || e.ID == "":
		return Elicitation{}, &ElicitationNotPendingError{SessionID: s.ID, ID: id, Lost: s.Markers.LostElicitation}
	case e.ID != id:
		return Elicitation{}, &ElicitationNotPendingError{SessionID: s.ID, ID: id, Pending: e.ID}
	}
	if answer.Action == ElicitAccept {
		if err := CheckElicitationContent(e.RequestedSchema, answer.Content); err != nil {
			return Elicitation{}, err
		}
	}
	return *e, nil
}

// ElicitationNotPendingError: the elicitation an answer names is not the
// one the session's agent waits on (it waits on Pending, or on none).
type ElicitationNotPendingError struct {
	SessionID int64
	ID        string
	Pending   string
	Lost      *LostElicitation
}

func (e *ElicitationNotPendingError) Error() string {
	switch {
	case e.Pending != "":
		return fmt.Sprintf("session #%d's agent is not waiting on elicitation %q: it waits on %q; answer that one (list them with GET /sessions/{id}/elicitations)",
			e.SessionID, e.ID, e.Pending)
	case e.Lost != nil && e.Lost.RequestID == e.ID:
		return fmt.Sprintf("elicitation %q of session #%d is no longer pending: it was lost (%s) and nobody can answer it now; send the session a message instead",
			e.ID, e.SessionID, e.Lost.Reason)
	}
	return fmt.Sprintf("session #%d has no pending elicitation %q: it was answered, expired or its turn ended; send the session a message instead",
		e.SessionID, e.ID)
}

// Unwrap makes it a NotFound: there is no such pending elicitation.
func (e *ElicitationNotPendingError) Unwrap() error { return ErrNotFound }

// ElicitationAnsweredLine is the timeline line of an answer the agent took.
func ElicitationAnsweredLine(e Elicitation, action string) string {
	return fmt.Sprintf("[Elicitation] %s answered: %s", quoteID(e.ID), action)
}

func quoteID(id string) string { return fmt.Sprintf("%q", id) }

// validateElicitation checks what block_on_elicitation records.
func validateElicitation(vs *validation.Violations, e *Elicitation) {
	if e == nil {
		return
	}
	checkText(vs, "elicitation.id", e.ID, maxElicitationIDChars, "")
	if validation.Blank(e.ID) {
		vs.Add("elicitation.id", "is required: the agent's request id, which answers name")
	}
	checkText(vs, "elicitation.message", e.Message, MaxElicitationMessageChars, "")
	if e.RequestedSchema != nil {
		if err := CheckElicitationSchema(e.RequestedSchema); err != nil {
			vs.Add("elicitation.requested_schema", "%s", err.Error())
		}
	}
}

// MaxElicitationMessageChars bounds what an agent asks.
const MaxElicitationMessageChars = 10_000
