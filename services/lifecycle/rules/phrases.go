package rules

import "fmt"

// The timeline's words where the spec quotes them (session-lifecycle.md,
// "The archive line names who did it" and "…and what the archive cost";
// issue 23 rule 18), each written once: the lifecycle domain writes its
// lines from them, docs/state-machine.md lists them (Phrases), and tests
// compare with them. A line may end naming the principal that made the
// call ("… (by operator key …abcd)"): the spec's words come first.
const (
	// ArchiveLine is the archive's line; %s is the actor, one of the
	// Actor… phrases.
	ArchiveLine = "[State Machine] Session moved to trash by %s"
	// UnarchiveLine is the restoration's: the actor, then the machine's
	// own account (from → to (event)).
	UnarchiveLine = "[State Machine] Session unarchived with full state restoration by %s: %s → %s (%s)"

	ActorWebUI                 = "a user in the web UI"
	ActorSessionViaMCP         = "session #%d via the MCP API"
	ActorUndeclaredMCP         = "an undeclared MCP API caller"
	ActorSessionViaSelfSession = "session #%d via the self-session MCP server"
	ActorUndeclaredSelfSession = "an undeclared caller via the self-session MCP server"
	ActorSessionViaREST        = "session #%d via the REST API"
	ActorRESTCaller            = "a caller of the REST API"
	// ActorSweep names one of Zimmer's own sweeps, e.g. StaleSessionSweep.
	ActorSweep = "Zimmer's %s"
	// StaleSessionSweep is the stale-session sweep; %s is its span in
	// words ("7 days").
	StaleSessionSweep = "stale-session sweep (untouched for %s)"
	// ActorUnrecorded: an actor is never inferred.
	ActorUnrecorded = "an unrecorded caller"
	// BulkActor follows the actor of a bulk archive: singling a session out
	// is a different act.
	BulkActor = " (bulk)"

	// UnresolvedPRClause and UnresolvedPRsClause follow the actor when
	// tracked pull requests had not reached a terminal state.
	UnresolvedPRClause  = " — 1 tracked pull request had not reached a terminal state, so no merge notification will be delivered for it: %s"
	UnresolvedPRsClause = " — %d tracked pull requests had not reached a terminal state, so no merge notification will be delivered for them: %s"
)

// Phrase is one of the spec's lines as Zimmer writes it, for the docs.
type Phrase struct {
	// When says when the line is written.
	When string
	// Line is the line, with an example filled in.
	Line string
}

// Phrases are the spec's archive and restore lines, filled in the way the
// spec's examples are.
func Phrases() []Phrase {
	archive := func(actor string) string { return fmt.Sprintf(ArchiveLine, actor) }
	return []Phrase{
		{"an archive from the console", archive(ActorWebUI)},
		{"an archive over MCP by a session that declared itself (acting_session_id)", archive(fmt.Sprintf(ActorSessionViaMCP, 5225))},
		{"an archive over MCP that declared no acting session", archive(ActorUndeclaredMCP)},
		{"a session archiving itself through its self-session server", archive(fmt.Sprintf(ActorSessionViaSelfSession, 5225))},
		{"an archive over REST by a session that declared itself", archive(fmt.Sprintf(ActorSessionViaREST, 5225))},
		{"an archive over REST that declared no acting session", archive(ActorRESTCaller)},
		{"the stale-session sweep's archive", archive(fmt.Sprintf(ActorSweep, fmt.Sprintf(StaleSessionSweep, "7 days")))},
		{"an archive by a caller that is none of these", archive(ActorUnrecorded)},
		{"a bulk archive (any of the actors above)", archive(ActorWebUI) + BulkActor},
		{"an archive with a tracked pull request not merged or closed",
			archive(fmt.Sprintf(ActorSessionViaMCP, 5225)) + fmt.Sprintf(UnresolvedPRClause, "https://github.com/tadasant/strad/pull/152")},
		{"an unarchive (the restore)", fmt.Sprintf(UnarchiveLine, ActorWebUI, StatusArchived, StatusNeedsInput, EventUnarchiveToNeedsInput)},
	}
}
