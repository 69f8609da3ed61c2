package domain

import (
	"context"
	"fmt"

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

// UncleGraph is what the uncle-edge rules read and write. Implementations
// run every call of one DecideUncleEdge inside one transaction that no other
// uncle-edge write interleaves with.
type UncleGraph interface {
	// Missing returns those of ids that lineage holds no node for.
	Missing(ctx context.Context, ids ...int64) ([]int64, error)
	// Reaches answers whether from reaches to going down (spawn parent to
	// child, uncle to junior) over at most budget visited sessions.
	Reaches(ctx context.Context, from, to int64, budget int) (Reach, error)
	// SpawnAncestor answers whether ancestor is on the spawn chain above of.
	SpawnAncestor(ctx context.Context, ancestor, of int64, budget int) (Reach, error)
	// HasUncleEdge reports whether uncle is recorded as junior's uncle.
	HasUncleEdge(ctx context.Context, uncle, junior int64) (bool, error)
	DeleteUncleEdge(ctx context.Context, uncle, junior int64) error
	InsertUncleEdge(ctx context.Context, e UncleEdge) error
}

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

// UncleDecision is the outcome and a sentence for the caller's log.
type UncleDecision struct {
	Outcome UncleOutcome
	Message string
	// Commit is false when the writes made on the way must be rolled back:
	// an inversion whose re-check found the target still senior.
	Commit bool
}

// DecideUncleEdge applies the rules for "A (acting) queues or interrupts B
// (target)" and makes the writes they call for:
//
//	A is B                              nothing
//	A already reaches B going down      nothing
//	B is A's spawn ancestor             nothing; the spawn edge is history
//	an uncle edge B → A exists          inverted: B → A deleted, A → B written,
//	                                    unless B still reaches A by a longer
//	                                    path, which refuses and rolls back
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
func DecideUncleEdge(ctx context.Context, g UncleGraph, e UncleEdge) (UncleDecision, error) {
	a, b := e.UncleSessionID, e.SessionID
	nothing := func(o UncleOutcome, format string, args ...any) (UncleDecision, error) {
		return UncleDecision{Outcome: o, Message: fmt.Sprintf(format, args...), Commit: true}, nil
	}
	if a == b {
		return nothing(UncleNothingSelf, "session %d messaging itself says nothing about lineage", a)
	}
	missing, err := g.Missing(ctx, a, b)
	if err != nil {
		return UncleDecision{}, err
	}
	if len(missing) > 0 {
		return nothing(UncleRefusedUnknownSession, "session %d is not known to lineage yet; no uncle edge recorded", missing[0])
	}

	down, err := g.Reaches(ctx, a, b, ReachabilityBudget)
	if err != nil {
		return UncleDecision{}, err
	}
	if down == Reachable {
		return nothing(UncleNothingAlreadyReachable, "session %d already reaches session %d going down; the graph already says so", a, b)
	}

	spawn, err := g.SpawnAncestor(ctx, b, a, ReachabilityBudget)
	if err != nil {
		return UncleDecision{}, err
	}
	if spawn == Reachable {
		return nothing(UncleNothingSpawnAncestor, "session %d spawned session %d's line; the spawn edge stays as recorded", b, a)
	}

	inverse, err := g.HasUncleEdge(ctx, b, a)
	if err != nil {
		return UncleDecision{}, err
	}
	if inverse {
		if err := g.DeleteUncleEdge(ctx, b, a); err != nil {
			return UncleDecision{}, err
		}
	}

	up, err := g.Reaches(ctx, b, a, ReachabilityBudget)
	if err != nil {
		return UncleDecision{}, err
	}
	switch {
	case up == Reachable && inverse:
		return UncleDecision{
			Outcome: UncleRefusedSenior,
			Message: fmt.Sprintf("session %d is still senior to session %d by a longer path; the inversion was rolled back", b, a),
		}, nil
	case up == Reachable:
		return nothing(UncleRefusedSenior, "session %d is senior to session %d two or more hops away; only a direct uncle edge inverts", b, a)
	case up == ReachUnknown:
		return UncleDecision{
			Outcome: UncleRefusedBudgetExhausted,
			Message: fmt.Sprintf("could not rule out that session %d is senior to session %d within %d sessions; refused rather than risk a cycle", b, a, ReachabilityBudget),
		}, nil
	}

	if err := g.InsertUncleEdge(ctx, e); err != nil {
		return UncleDecision{}, err
	}
	if inverse {
		return UncleDecision{Outcome: UncleInverted, Message: fmt.Sprintf("uncle edge %d → %d replaced by %d → %d", b, a, a, b), Commit: true}, nil
	}
	return UncleDecision{Outcome: UncleWritten, Message: fmt.Sprintf("uncle edge %d → %d written", a, b), Commit: true}, nil
}
