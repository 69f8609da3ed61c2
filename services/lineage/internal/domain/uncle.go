package domain

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// EdgeKind tells the two kinds of lineage edge apart.
type EdgeKind int

const (
	// EdgeSpawn is "the senior spawned the junior": one per session, a tree.
	EdgeSpawn EdgeKind = iota + 1
	// EdgeUncle is "the senior queued or interrupted the junior": any number
	// per session, so the combined graph is a DAG.
	EdgeUncle
)

// Edge points from the senior session to the junior one, whatever its kind.
type Edge struct {
	SeniorID, JuniorID int64
	Kind               EdgeKind
}

// UncleEdge records that UncleSessionID (the acting session) inspected
// SessionID (the target) and queued or interrupted it.
type UncleEdge struct {
	SessionID      int64
	UncleSessionID int64
	// EntryPoint names the path that recorded the edge, e.g.
	// "mcp.action_session.follow_up".
	EntryPoint string
	// RecordedBy is who made the call, as an audit line names a principal
	// ("session #12's credential", "operator key …abcd"): said on both
	// timeline lines, never stored with the edge. Empty names no one.
	RecordedBy string
}

// MaxEntryPointLength bounds UncleEdge.EntryPoint.
const MaxEntryPointLength = 100

// Validate reports the first field that makes e unrecordable.
func (e UncleEdge) Validate() error {
	switch {
	case e.UncleSessionID <= 0:
		return validation.Invalid("acting_session_id", "must be a positive session id")
	case e.SessionID <= 0:
		return validation.Invalid("target_session_id", "must be a positive session id")
	case e.EntryPoint == "":
		return validation.Invalid("entry_point", "missing; it names the path that recorded the edge")
	case len(e.EntryPoint) > MaxEntryPointLength:
		return validation.Invalid("entry_point", "longer than %d bytes", MaxEntryPointLength)
	case !utf8.ValidString(e.EntryPoint) || strings.ContainsFunc(e.EntryPoint, unicode.IsControl):
		// It is stored, and written into both sessions' timeline lines.
		return validation.Invalid("entry_point", "must be UTF-8 text without control characters")
	}
	return nil
}

// Reach is the answer of a budgeted reachability search.
type Reach int

const (
	// Unreachable: the search covered everything and found no path.
	Unreachable Reach = iota + 1
	// Reachable: a path exists.
	Reachable
	// ReachUnknown: the search visited ReachabilityBudget sessions without
	// finding a path or running out of sessions. Callers that guard an
	// invariant treat it as Reachable.
	ReachUnknown
)

// UncleOutcome is what recording an uncle edge did.
type UncleOutcome int

// The outcomes, one per row of the rules table plus the refusals.
const (
	UncleWritten UncleOutcome = iota + 1
	UncleInverted
	UncleNothingSelf
	UncleNothingAlreadyReachable
	UncleNothingSpawnAncestor
	UncleRefusedSenior
	UncleRefusedUnknownSession
	UncleRefusedBudgetExhausted
)

// String names the outcome as the logs and tests do.
func (o UncleOutcome) String() string {
	switch o {
	case UncleWritten:
		return "written"
	case UncleInverted:
		return "inverted"
	case UncleNothingSelf:
		return "nothing_self"
	case UncleNothingAlreadyReachable:
		return "nothing_already_reachable"
	case UncleNothingSpawnAncestor:
		return "nothing_spawn_ancestor"
	case UncleRefusedSenior:
		return "refused_senior"
	case UncleRefusedUnknownSession:
		return "refused_unknown_session"
	case UncleRefusedBudgetExhausted:
		return "refused_budget_exhausted"
	}
	return fmt.Sprintf("UncleOutcome(%d)", int(o))
}

// UncleFacts is what the uncle-edge rules need to know about the graph, for
// the acting session A and the target B. The app reads them under the
// uncle-edge lock and holds it until the decision's writes commit, so they
// are still true when the decision is carried out.
type UncleFacts struct {
	// Missing are those of A and B that lineage holds no node for, A first.
	Missing []int64
	// ActingReachesTarget: A reaches B going down (spawn parent to child,
	// uncle to junior).
	ActingReachesTarget Reach
	// TargetSpawnedActing: B is on the spawn chain above A.
	TargetSpawnedActing Reach
	// TargetIsUncle: the uncle edge B → A is recorded.
	TargetIsUncle bool
	// TargetReachesActing: B reaches A going down by some path other than
	// the uncle edge B → A, i.e. whether B would still be senior to A were
	// that edge inverted.
	TargetReachesActing Reach
}

// UncleDecision is the outcome, a sentence for the caller's log, and the
// writes that carry it out.
type UncleDecision struct {
	Outcome UncleOutcome
	Message string
	// DeleteInverse: delete the uncle edge B → A.
	DeleteInverse bool
	// Insert: insert the uncle edge A → B.
	Insert bool
}

// DecideUncleEdge applies the rules for "A (acting) queues or interrupts B
// (target)" to what f says of the graph:
//
//	A is B                              nothing
//	A or B unknown to lineage           refused
//	A already reaches B going down      nothing
//	B is A's spawn ancestor             nothing; the spawn edge is history
//	an uncle edge B → A exists          inverted: B → A deleted, A → B written,
//	                                    unless B still reaches A by a longer
//	                                    path, which refuses
//	B reaches A two or more hops away   refused
//	otherwise                           A → B written
//
// The spawn-ancestor row is checked before inversion so that a parent's
// spawn edge can never be the reason an inversion is refused.
//
// Together they are the acyclicity invariant: A → B is written only after a
// complete search found that B cannot reach A. A search that runs out of
// ReachabilityBudget proves nothing, so it refuses (UncleRefusedBudgetExhausted)
// rather than risk a cycle; "A already reaches B" running out only means the
// edge may be redundant, so that one falls through to the other checks.
func DecideUncleEdge(e UncleEdge, f UncleFacts) UncleDecision {
	a, b := e.UncleSessionID, e.SessionID
	nothing := func(o UncleOutcome, format string, args ...any) UncleDecision {
		return UncleDecision{Outcome: o, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case a == b:
		return nothing(UncleNothingSelf, "session %d messaging itself says nothing about lineage", a)
	case len(f.Missing) > 0:
		return nothing(UncleRefusedUnknownSession, "session %d is not known to lineage yet; no uncle edge recorded", f.Missing[0])
	case f.ActingReachesTarget == Reachable:
		return nothing(UncleNothingAlreadyReachable, "session %d already reaches session %d going down; the graph already says so", a, b)
	case f.TargetSpawnedActing == Reachable:
		return nothing(UncleNothingSpawnAncestor, "session %d spawned session %d's line; the spawn edge stays as recorded", b, a)
	case f.TargetReachesActing == Reachable && f.TargetIsUncle:
		return nothing(UncleRefusedSenior, "session %d is still senior to session %d by a longer path; the inversion was rolled back", b, a)
	case f.TargetReachesActing == Reachable:
		return nothing(UncleRefusedSenior, "session %d is senior to session %d two or more hops away; only a direct uncle edge inverts", b, a)
	case f.TargetReachesActing == ReachUnknown:
		return nothing(UncleRefusedBudgetExhausted, "could not rule out that session %d is senior to session %d within %d sessions; refused rather than risk a cycle", b, a, ReachabilityBudget)
	case f.TargetIsUncle:
		return UncleDecision{Outcome: UncleInverted, Message: fmt.Sprintf("uncle edge %d → %d replaced by %d → %d", b, a, a, b), DeleteInverse: true, Insert: true}
	}
	return UncleDecision{Outcome: UncleWritten, Message: fmt.Sprintf("uncle edge %d → %d written", a, b), Insert: true}
}
