package domain

import "github.com/zimmerhq/zimmer/services/lifecycle/rules"

// Decision is what a lost turn calls for, or a session the orphan sweep
// found with no live turn.
type Decision int

// Decisions.
const (
	// StandDown: the session is at rest (a finished turn, a deliberate
	// pause, asleep on a wake ahead, failed, archived); nothing was
	// interrupted, so nothing runs.
	StandDown Decision = iota
	// Recover: resume with the recovery nudge naming its path (or deliver
	// the queued message instead).
	Recover
	// ReplayStart: the runtime never confirmed a conversation to resume;
	// the session's first prompt runs again as a fresh start, at most
	// MaxStartReplays times.
	ReplayStart
	// Park: the recovery cannot continue the session now (no conversation
	// to resume, no clone, or a dead agent found with nothing queued): it
	// rests in needs_input with paused_by: recovery, for a human or the
	// orphan sweep to pick up, instead of resuming at once.
	Park
)

func (d Decision) String() string {
	return [...]string{"stand down", "recover", "replay the start", "park"}[d]
}

// Row is one row of the stand-down table: the sessions it matches, whether
// a lost turn of theirs is recovered, and why, as the timeline says it.
type Row struct {
	// Session names the state the row matches and why it decides as it
	// does ("needs_input with no paused_by: its turn had finished").
	Session  string
	Recovers bool
	matches  func(SessionState) bool
}

// standDownTable is the spec's table ("A finished turn is not an
// interruption", "waiting is three different situations"), read top to
// bottom, a positive test: it names the states that are done being
// driven, and everything else recovers.
var standDownTable = []Row{
	{Session: "running: its turn was interrupted", Recovers: true,
		matches: func(s SessionState) bool { return s.Status == rules.StatusRunning }},
	// Blocked on an elicitation carries no paused_by, and is not at rest:
	// the process it waited in is gone.
	{Session: "needs_input, blocked on an elicitation whose process is gone", Recovers: true,
		matches: func(s SessionState) bool { return s.Status == rules.StatusNeedsInput && s.BlockedOnElicitation }},
	{Session: "needs_input with paused_by: recovery: an earlier recovery parked it", Recovers: true,
		matches: func(s SessionState) bool {
			return s.Status == rules.StatusNeedsInput && s.PausedBy == rules.PausedByRecovery
		}},
	{Session: "needs_input with paused_by: mcp_retry: parked for a delayed retry", Recovers: true,
		matches: func(s SessionState) bool {
			return s.Status == rules.StatusNeedsInput && s.PausedBy == rules.PausedByMCPRetry
		}},
	{Session: "needs_input with no paused_by: its turn had finished, nothing was interrupted",
		matches: func(s SessionState) bool { return s.Status == rules.StatusNeedsInput && s.PausedBy == "" }},
	{Session: "needs_input, paused on purpose: the pause was deliberate",
		matches: func(s SessionState) bool { return s.Status == rules.StatusNeedsInput }},
	{Session: "waiting, asleep on a wake still ahead: the wake will fire",
		matches: func(s SessionState) bool { return s.Status == rules.StatusWaiting && s.AwaitingWake }},
	{Session: "waiting, parked on its login pool (paused_by: auth_outage): the pool's refill resumes it",
		matches: func(s SessionState) bool {
			return s.Status == rules.StatusWaiting && s.PausedBy == rules.PausedByAuthOutage
		}},
	{Session: "waiting with no wake ahead: stranded mid-start or mid-sleep", Recovers: true,
		matches: func(s SessionState) bool { return s.Status == rules.StatusWaiting }},
	{Session: "failed, archived or deleted: at rest for good",
		matches: func(SessionState) bool { return true }},
}

// RowFor is the row of the stand-down table that decides for s.
func RowFor(s SessionState) Row {
	for _, r := range standDownTable {
		if r.matches(s) {
			return r
		}
	}
	panic("unreachable: the stand-down table's last row matches every session")
}

// Decide is the stand-down table's decision for s. confirmed says whether
// the runtime has a conversation to resume (a turn's process ran before).
func Decide(s SessionState, confirmed bool) Decision {
	switch {
	case !RowFor(s).Recovers:
		return StandDown
	case !confirmed:
		return ReplayStart
	}
	return Recover
}

// Loss is what the workflow knows of a lost turn, or of a session the
// orphan sweep found with no live turn, when it decides.
type Loss struct {
	// Path names who found it (PathInterruptedTurn, PathRunnerShutdown,
	// PathOrphanSweep: a dead agent found).
	Path string
	// Confirmed: the runtime began a conversation that can be resumed.
	Confirmed bool
	// CloneGone: the session's clone is no longer on its node's disk.
	CloneGone bool
}

// Why the recovery cannot continue a session (LossPlan.Cannot), as the
// park's timeline line says it.
const (
	CannotNoConversation = "its runtime never began a conversation to resume"
	CannotNothingQueued  = "nothing is queued for it"
	CannotCloneGone      = "its clone is gone from its runner node"
)

// LossPlan is what follows a lost turn once the stand-down table has read
// the session.
type LossPlan struct {
	Decision Decision
	// Row is the stand-down table's row that decided.
	Row Row
	// Exhausted: the decision's budget is spent — a replayed start fails
	// the session (StartReplaysReason), a recovery is abandoned
	// (RecoveriesReason, CloneGoneReason) — and no turn runs.
	Exhausted bool
	// Park: the session is still running, so it is paused (paused_by
	// PausedByRecovery): before the recovery turn resumes it, to rest there
	// (Decision Park), or once its recovery is abandoned.
	Park bool
	// DrainFirst: before parking, the queue is asked for its next message,
	// which runs instead (someone has taken the session over); the rest
	// stay pending behind it.
	DrainFirst bool
	// Cannot says why a Park decision cannot continue the session.
	Cannot string
}

// PlanLoss decides what follows a lost turn from the session as lifecycle
// has it now, what the workflow knows of the loss, and the recoveries and
// replayed starts already spent since the last clean exit.
//
// A running session whose recovery cannot continue it — its runtime never
// began a conversation, its clone is gone, or (found by the orphan sweep)
// its agent is dead with nothing queued — is parked, not resumed at once;
// the orphan sweep picks a parked session up again (it is then no longer
// running), and that pickup replays the start or resumes with the nudge.
// A parked session whose clone is still gone stays parked, which spends
// the recovery budget, so the sweep gives it up in the end.
func PlanLoss(s SessionState, loss Loss, recoveries, startReplays int) LossPlan {
	p := LossPlan{Row: RowFor(s)}
	running := s.Status == rules.StatusRunning
	switch {
	case !p.Row.Recovers:
		p.Decision = StandDown
	case running && !loss.Confirmed:
		p.Decision, p.Park, p.Cannot = Park, true, CannotNoConversation
	case loss.CloneGone:
		p.Decision, p.Park, p.Cannot = Park, running, CannotCloneGone
		p.Exhausted = !running && recoveries >= MaxRecoveries
	case running && loss.Path == PathOrphanSweep:
		p.Decision, p.Park, p.DrainFirst, p.Cannot = Park, true, true, CannotNothingQueued
	case !loss.Confirmed:
		p.Decision = ReplayStart
		p.Exhausted = startReplays >= MaxStartReplays
	default:
		p.Decision = Recover
		p.Exhausted = recoveries >= MaxRecoveries
		p.Park = running
		p.DrainFirst = running && !p.Exhausted
	}
	return p
}

// NeedsTheClone reports whether the clone decides: a recovery or a
// replayed start (a turn in the clone, or its budget spent on a clone
// gone); a stand-down, or a park already decided, needs none.
func (p LossPlan) NeedsTheClone() bool {
	return p.Decision == Recover || p.Decision == ReplayStart
}
