package domain

import (
	"fmt"
	"strings"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// ActorKind is the surface a request came through.
type ActorKind int

// Actor kinds. The zero value is an unrecorded caller: an actor is never
// inferred.
const (
	ActorUnrecorded ActorKind = iota
	ActorWebUI
	ActorREST
	ActorMCP
	ActorSelfSessionMCP
	ActorSweep
)

// Actor is who asked for a transition. It names the archiver on the archive
// line, for that transition only: it is never persisted and never reused.
type Actor struct {
	Kind ActorKind
	// SessionID is the acting session an MCP caller declared
	// (acting_session_id), or 0.
	SessionID int64
	// Sweep names a system sweep, e.g. "stale-session sweep (untouched for 7 days)".
	Sweep string
	// Bulk marks an action taken on many sessions in one request (bulk
	// archive), which the line says: it is a different act from singling
	// the session out.
	Bulk bool
	// By is the principal that made the call, as an audit line names it
	// ("operator key …abcd", "session #12's credential", "the runner"),
	// never a secret. Every timeline line the call writes ends naming it
	// (Attributed). Empty for Zimmer's own acts (a sweep), which the line
	// already names.
	By string
}

// BulkForceNote follows the queue's refusal of one session of a bulk
// archive: force there is one flag for the whole batch, so re-calling with
// it discards every refused session's messages, not this one's alone.
const BulkForceNote = "\n\nThis was a bulk archive: \"force\": true applies to every session in the batch, not to this one alone. " +
	"To discard only this session's messages, archive it on its own with \"force\": true."

// Phrase says who the actor is, for a timeline line.
func (a Actor) Phrase() string {
	if a.Bulk {
		return a.who() + rules.BulkActor
	}
	return a.who()
}

func (a Actor) who() string {
	switch a.Kind {
	case ActorWebUI:
		return rules.ActorWebUI
	case ActorREST:
		if a.SessionID > 0 {
			return fmt.Sprintf(rules.ActorSessionViaREST, a.SessionID)
		}
		return rules.ActorRESTCaller
	case ActorMCP:
		if a.SessionID > 0 {
			return fmt.Sprintf(rules.ActorSessionViaMCP, a.SessionID)
		}
		return rules.ActorUndeclaredMCP
	case ActorSelfSessionMCP:
		if a.SessionID > 0 {
			return fmt.Sprintf(rules.ActorSessionViaSelfSession, a.SessionID)
		}
		// The self-session server narrows the actions, not the session
		// they aim at: without a declaration nothing says which session
		// called.
		return rules.ActorUndeclaredSelfSession
	case ActorSweep:
		return fmt.Sprintf(rules.ActorSweep, a.Sweep)
	default:
		return rules.ActorUnrecorded
	}
}

// ArchiveLine is the timeline line an archive writes: who did it and, when
// tracked pull requests had not reached a terminal state, which ones will
// never get their merge notification.
func ArchiveLine(a Actor, unresolvedPRs []string) string {
	line := fmt.Sprintf(rules.ArchiveLine, a.Phrase())
	switch n := len(unresolvedPRs); {
	case n == 1:
		line += fmt.Sprintf(rules.UnresolvedPRClause, unresolvedPRs[0])
	case n > 1:
		line += fmt.Sprintf(rules.UnresolvedPRsClause, n, strings.Join(unresolvedPRs, ", "))
	}
	return line
}

// UnarchiveLine is the one line a restoration (unarchive to needs_input)
// writes: the original's words, who asked, then the machine's own account
// of the change, as every transition line gives it.
func UnarchiveLine(a Actor, from, to Status, e Event) string {
	return fmt.Sprintf(rules.UnarchiveLine, a.Phrase(), from, to, e)
}

// Attributed is line ending with the principal that made the call writing
// it — "… (by operator key …abcd)" — so that every line a call writes
// says who made it. The principal trails the line, so each line reads
// first as the spec words it. Empty by leaves line as it is rather than
// guess.
func Attributed(line, by string) string {
	if by == "" {
		return line
	}
	return line + " (by " + by + ")"
}

// RefusalLine is the timeline line of a refused transition: what was
// refused and why, and who asked.
func RefusalLine(err *TransitionError, by string) TimelineEntry {
	return TimelineEntry{Kind: TimelineRefusal, Message: Attributed("[State Machine] refused: "+err.Error(), by)}
}

// CloneRestoration is what an unarchive does with the session's clone, as
// the runner's record of it says.
type CloneRestoration struct {
	// Restored: a clone comes back with the session.
	Restored bool
	// Recreated: it had been deleted and is re-cloned, its preserved work
	// applied.
	Recreated bool
}

// RestorationOf reads the runner's clone state: a clone on disk (being
// made, ready, or retained in the trash) is put back as it stands; a
// deleted one (preserved, reaped) is recreated; none ("") or a failed one
// is not restored.
func RestorationOf(cloneState string) CloneRestoration {
	switch cloneState {
	case "provisioning", "ready", "retained":
		return CloneRestoration{Restored: true}
	case "preserved", "reaped":
		return CloneRestoration{Restored: true, Recreated: true}
	}
	return CloneRestoration{}
}
