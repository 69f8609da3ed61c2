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
)

func (d Decision) String() string {
	return [...]string{"stand down", "recover", "replay the start"}[d]
}

// Decide is the stand-down table (session-lifecycle.md, "A finished turn is
// not an interruption" and "waiting is three different situations"), a
// positive test: it names the states that are done being driven, and
// everything else recovers. confirmed says whether the runtime has a
// conversation to resume (a turn's process ran before).
func Decide(s SessionState, confirmed bool) Decision {
	again := Recover
	if !confirmed {
		again = ReplayStart
	}
	switch s.Status {
	case rules.StatusRunning:
		return again
	case rules.StatusNeedsInput:
		// Blocked on an elicitation carries no paused_by, and is not at
		// rest: the process it waited in is gone.
		if s.BlockedOnElicitation || s.PausedBy == rules.PausedByRecovery || s.PausedBy == rules.PausedByMCPRetry {
			return again
		}
		return StandDown // the turn finished (no paused_by) or a user paused it
	case rules.StatusWaiting:
		if s.AwaitingWake {
			return StandDown // asleep on purpose: let the wake fire
		}
		return again // stranded mid-start or mid-sleep
	}
	return StandDown // failed, archived, deleted
}

// LossPlan is what follows a lost turn once Decide has read the session.
type LossPlan struct {
	Decision Decision
	// Exhausted: the decision's budget is spent — a replayed start fails
	// the session (StartReplaysReason), a recovery is abandoned
	// (RecoveriesReason) — and no turn runs.
	Exhausted bool
	// Park: the session is still running, so it is paused (paused_by
	// PausedByRecovery): before the recovery turn resumes it, or to rest
	// there once its recovery is abandoned.
	Park bool
	// DrainFirst: before parking, the queue is asked for its next message,
	// which runs instead of the recovery nudge (someone has taken the
	// session over).
	DrainFirst bool
}

// PlanLoss decides what follows a lost turn from the session as lifecycle
// has it now, whether the runtime confirmed a conversation, and the
// recoveries and replayed starts already spent since the last clean exit.
func PlanLoss(s SessionState, confirmed bool, recoveries, startReplays int) LossPlan {
	p := LossPlan{Decision: Decide(s, confirmed)}
	switch p.Decision {
	case StandDown:
		return p
	case ReplayStart:
		p.Exhausted = startReplays >= MaxStartReplays
	case Recover:
		p.Exhausted = recoveries >= MaxRecoveries
	}
	p.Park = s.Status == rules.StatusRunning
	p.DrainFirst = p.Park && p.Decision == Recover && !p.Exhausted
	return p
}
