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

// Changed returns the fact d announces for e at at, and false when d
// changed nothing: a session messaging itself, an edge the graph already
// asserts, a spawn ancestor, and the refusals write no line anywhere,
// because nothing about either session's lineage is different afterwards.
func (d UncleDecision) Changed(e UncleEdge, at time.Time) (UncleEdgeChanged, bool) {
	a, b, via := e.UncleSessionID, e.SessionID, e.EntryPoint
	var acting, target string
	switch d.Outcome {
	case UncleWritten:
		acting = fmt.Sprintf("[Lineage] This session is now an uncle of session #%d: it queued or interrupted that session via %s", b, via)
		target = fmt.Sprintf("[Lineage] Session #%d is now an uncle of this session: it queued or interrupted this session via %s", a, via)
	case UncleInverted:
		// The newer act of inspection supersedes the older one: say which
		// edge went and which replaced it, on both sides.
		swap := fmt.Sprintf("uncle edge #%d → #%d replaced by #%d → #%d", b, a, a, b)
		acting = fmt.Sprintf("[Lineage] Seniority inverted: this session queued or interrupted session #%d via %s and is now its uncle (%s)", b, via, swap)
		target = fmt.Sprintf("[Lineage] Seniority inverted: session #%d queued or interrupted this session via %s and is now its uncle (%s)", a, via, swap)
	default:
		return UncleEdgeChanged{}, false
	}
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
