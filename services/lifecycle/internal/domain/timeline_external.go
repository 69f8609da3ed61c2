package domain

import "github.com/zimmerhq/zimmer/services/platform/validation"

// MaxExternalTimelineLineChars bounds a line another context writes: a
// sentence, not a log dump.
const MaxExternalTimelineLineChars = 2000

// ExternalTimelineLine is a line another context asks lifecycle to write on
// a session's timeline, which lifecycle owns: lineage's sentence about an
// uncle edge recorded or inverted, say. The other context decides what it
// says; lifecycle decides whether it may be written.
type ExternalTimelineLine struct {
	SessionID int64
	Entry     TimelineEntry
}

// Validate reports every problem that keeps l off a timeline. Only notes
// and warnings may come from outside: transitions and refusals are the
// state machine's own account of itself, and a line claiming to be one
// would forge it.
func (l ExternalTimelineLine) Validate() error {
	var vs validation.Violations
	if l.SessionID <= 0 {
		vs.Add("session_id", "must be a positive session id")
	}
	if l.Entry.Kind != TimelineNote && l.Entry.Kind != TimelineWarning {
		vs.Add("kind", "is %q; another context may write %q or %q", l.Entry.Kind, TimelineNote, TimelineWarning)
	}
	if validation.Blank(l.Entry.Message) {
		vs.Add("message", "missing; a line says something")
	} else {
		checkText(&vs, "message", l.Entry.Message, MaxExternalTimelineLineChars, "")
	}
	return vs.Err()
}
