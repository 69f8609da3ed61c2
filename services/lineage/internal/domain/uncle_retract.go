package domain

import (
	"fmt"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// UncleRetraction asks to undo what recording Edge did, because the
// delivery it was recorded for failed: Edge is the acting session (the
// uncle) and the target as they were recorded, its EntryPoint the path
// whose delivery failed, and Recorded the outcome recording answered.
type UncleRetraction struct {
	Edge     UncleEdge
	Recorded UncleOutcome
}

// Validate reports the first field that makes r unretractable.
func (r UncleRetraction) Validate() error {
	if err := r.Edge.Validate(); err != nil {
		return err
	}
	if r.Recorded < UncleWritten || r.Recorded > UncleRefusedBudgetExhausted {
		return validation.Invalid("recorded", "missing or unknown; pass the outcome RecordUncleEdge answered")
	}
	return nil
}

// RetractionOutcome is what retracting an uncle edge did.
type RetractionOutcome int

const (
	// RetractNothingRecorded: recording changed nothing, so there is
	// nothing to undo.
	RetractNothingRecorded RetractionOutcome = iota + 1
	// RetractNothingThere: acting → target is no longer recorded (already
	// retracted, inverted back, or gone with a deleted session).
	RetractNothingThere
	// RetractDeleted: the written edge acting → target was deleted.
	RetractDeleted
	// RetractRestored: the inversion was undone: acting → target deleted
	// and the edge it replaced, target → acting, put back as recorded.
	RetractRestored
	// RetractDeletedNotRestored: acting → target was deleted, but putting
	// target → acting back was not safe or not possible (see the message).
	RetractDeletedNotRestored
)

// String names the outcome as the logs and tests do.
func (o RetractionOutcome) String() string {
	switch o {
	case RetractNothingRecorded:
		return "nothing_recorded"
	case RetractNothingThere:
		return "nothing_there"
	case RetractDeleted:
		return "deleted"
	case RetractRestored:
		return "restored"
	case RetractDeletedNotRestored:
		return "deleted_not_restored"
	}
	return fmt.Sprintf("RetractionOutcome(%d)", int(o))
}

// RetractionFacts is what the retraction rules need to know about the
// graph, for the acting session A and the target B, read under the
// uncle-edge lock like UncleFacts and for the same reason.
type RetractionFacts struct {
	// Present: the uncle edge A → B is recorded.
	Present bool
	// ReplacedInverse: A → B was written by an inversion and still keeps
	// the edge B → A it replaced, so that edge can be put back as it was.
	ReplacedInverse bool
	// ActingReachesTargetOtherwise: A reaches B going down by some path
	// other than the edge A → B; writing B → A then would close a cycle.
	ActingReachesTargetOtherwise Reach
}

// RetractionDecision is the outcome, a sentence for the caller's log, and
// the writes that carry it out.
type RetractionDecision struct {
	Outcome RetractionOutcome
	Message string
	// Delete: delete the uncle edge A → B.
	Delete bool
	// Restore: with A → B, put back the edge B → A it replaced.
	Restore bool
	// NotRestoredBecause says, for RetractDeletedNotRestored, why B → A
	// stays out.
	NotRestoredBecause string
}

// Retracted reports whether d undoes anything.
func (d RetractionDecision) Retracted() bool { return d.Delete }

// DecideUncleRetraction applies the rules for "the delivery A → B was
// recorded for failed" to what f says of the graph:
//
//	recording changed nothing             nothing to undo
//	A → B no longer recorded              nothing to undo
//	recorded WRITTEN                      A → B deleted
//	recorded INVERTED                     A → B deleted, and B → A put back
//	                                      as it was recorded, unless A still
//	                                      reaches B by another path (a cycle),
//	                                      the search ran out of budget, or the
//	                                      edge deleted no longer keeps the one
//	                                      it replaced
//
// Putting B → A back is a write like any other, so it keeps the
// acyclicity invariant: B → A is written only after a complete search
// found that A cannot reach B once A → B is gone. Deleting never makes a
// cycle, so the claim the failed delivery made is always withdrawn.
//
// Without an identity per delivery, "A → B is recorded" cannot tell the
// failed delivery's edge from an identical one another delivery of A to B
// relied on since (that one was told NOTHING_ALREADY_REACHABLE): the edge
// goes, and lineage under-claims rather than over-claims.
func DecideUncleRetraction(r UncleRetraction, f RetractionFacts) RetractionDecision {
	a, b := r.Edge.UncleSessionID, r.Edge.SessionID
	nothing := func(o RetractionOutcome, format string, args ...any) RetractionDecision {
		return RetractionDecision{Outcome: o, Message: fmt.Sprintf(format, args...)}
	}
	notRestored := func(format string, args ...any) RetractionDecision {
		why := fmt.Sprintf(format, args...)
		return RetractionDecision{
			Outcome:            RetractDeletedNotRestored,
			Message:            fmt.Sprintf("uncle edge %d → %d deleted; %d → %d not restored: %s", a, b, b, a, why),
			Delete:             true,
			NotRestoredBecause: why,
		}
	}
	switch {
	case r.Recorded != UncleWritten && r.Recorded != UncleInverted:
		return nothing(RetractNothingRecorded, "recording answered %s, which changed nothing; nothing to retract", r.Recorded)
	case !f.Present:
		return nothing(RetractNothingThere, "uncle edge %d → %d is no longer recorded; nothing to retract", a, b)
	case r.Recorded == UncleWritten:
		return RetractionDecision{Outcome: RetractDeleted, Message: fmt.Sprintf("uncle edge %d → %d deleted", a, b), Delete: true}
	case !f.ReplacedInverse:
		return notRestored("the edge deleted no longer records the one it replaced")
	case f.ActingReachesTargetOtherwise == Reachable:
		return notRestored("session #%d still reaches session #%d by another path, so it would close a cycle", a, b)
	case f.ActingReachesTargetOtherwise == ReachUnknown:
		return notRestored("could not rule out within %d sessions that it would close a cycle", ReachabilityBudget)
	}
	return RetractionDecision{
		Outcome: RetractRestored,
		Message: fmt.Sprintf("uncle edge %d → %d deleted and %d → %d restored", a, b, b, a),
		Delete:  true, Restore: true,
	}
}

// Changed returns the fact d announces for r at at, and false when d
// undid nothing. Both sessions' timelines say the edge was withdrawn
// because the delivery via r's entry point failed, and what became of
// the edge an inversion had replaced.
func (d RetractionDecision) Changed(r UncleRetraction, at time.Time) (UncleEdgeChanged, bool) {
	if !d.Retracted() {
		return UncleEdgeChanged{}, false
	}
	e := r.Edge
	a, b, via := e.UncleSessionID, e.SessionID, e.EntryPoint
	var acting, target string
	switch d.Outcome {
	case RetractDeleted:
		acting = fmt.Sprintf("[Lineage] This session is no longer an uncle of session #%d: its delivery to that session via %s failed, so the uncle edge #%d → #%d recorded for it was withdrawn", b, via, a, b)
		target = fmt.Sprintf("[Lineage] Session #%d is no longer an uncle of this session: its delivery to this session via %s failed, so the uncle edge #%d → #%d recorded for it was withdrawn", a, via, a, b)
	default:
		undone := fmt.Sprintf("uncle edge #%d → #%d withdrawn and #%d → #%d restored", a, b, b, a)
		if !d.Restore {
			undone = fmt.Sprintf("uncle edge #%d → #%d withdrawn; #%d → #%d not restored: %s", a, b, b, a, d.NotRestoredBecause)
		}
		acting = fmt.Sprintf("[Lineage] Seniority inversion withdrawn: this session's delivery to session #%d via %s failed (%s)", b, via, undone)
		target = fmt.Sprintf("[Lineage] Seniority inversion withdrawn: session #%d's delivery to this session via %s failed (%s)", a, via, undone)
	}
	return UncleEdgeChanged{
		Edge:      e,
		Outcome:   r.Recorded,
		Withdrawn: true,
		At:        at,
		Lines: []TimelineLine{
			{SessionID: a, Message: Attributed(acting, e.RecordedBy)},
			{SessionID: b, Message: Attributed(target, e.RecordedBy)},
		},
	}, true
}
