package domain

import (
	"fmt"
	"time"
)

// TimelineLine is a sentence for one session's timeline. Lineage decides
// what it says; lifecycle, which owns the timelines, writes it.
type TimelineLine struct {
	SessionID int64
	Message   string
}

// UncleEdgeChanged is the fact lineage announces when recording an uncle
// edge, or retracting one, changed the graph, so that the outcome is
// visible on both sessions' timelines and not only in the reply to whoever
// recorded it.
type UncleEdgeChanged struct {
	Edge    UncleEdge
	Outcome UncleOutcome // UncleWritten or UncleInverted
	// Withdrawn: the change undoes Outcome, because the delivery it was
	// recorded for failed (RetractionDecision.Changed).
	Withdrawn bool
	At        time.Time
	// Lines are the acting session's sentence, then the target's.
	Lines []TimelineLine
}

// The uncle edge's timeline lines, written once here and read by the
// tests: one sentence, the same on both sessions' timelines, naming both by
// #id and the entry point that recorded the edge (its source).
const (
	// LineUncleWritten: uncle, junior, uncle, junior, source.
	LineUncleWritten = "[Lineage] Uncle edge recorded: session #%d is now an uncle of session #%d " +
		"(session #%d queued or interrupted session #%d via %s)"
	// LineUncleInverted: the old edge (junior → uncle), the new one (uncle
	// → junior), then uncle, junior, source.
	LineUncleInverted = "[Lineage] Uncle edge inverted: #%d → #%d replaced by #%d → #%d " +
		"(session #%d queued or interrupted session #%d via %s, so it is now the senior)"
)

// Changed returns the fact d announces for e at at, and false when d
// changed nothing: a session messaging itself, an edge the graph already
// asserts, a spawn ancestor, and the refusals write no line anywhere,
// because nothing about either session's lineage is different afterwards.
func (d UncleDecision) Changed(e UncleEdge, at time.Time) (UncleEdgeChanged, bool) {
	a, b, via := e.UncleSessionID, e.SessionID, e.EntryPoint
	var line string
	switch d.Outcome {
	case UncleWritten:
		line = fmt.Sprintf(LineUncleWritten, a, b, a, b, via)
	case UncleInverted:
		// The newer act of inspection supersedes the older one: name the
		// edge that went and the one that replaced it.
		line = fmt.Sprintf(LineUncleInverted, b, a, a, b, a, b, via)
	default:
		return UncleEdgeChanged{}, false
	}
	acting, target := line, line
	return UncleEdgeChanged{
		Edge:    e,
		Outcome: d.Outcome,
		At:      at,
		Lines: []TimelineLine{
			{SessionID: a, Message: Attributed(acting, e.RecordedBy)},
			{SessionID: b, Message: Attributed(target, e.RecordedBy)},
		},
	}, true
}

// Attributed is line naming the principal that made the call writing it,
// e.g. "… (by session #12's credential)": every line a call writes says
// who made it. by is a principal's description, never a secret; empty
// leaves the line as it is rather than guess.
func Attributed(line, by string) string {
	if by == "" {
		return line
	}
	return line + " (by " + by + ")"
}
