// Package domain holds the runner's decisions about a session's turns, pure
// and in one place: what a lost turn calls for (Decide, the stand-down
// table, and PlanLoss), what follows a turn's end (AfterTurn, the turn-state
// table), the budgets that bound automatic recovery, and the words the
// runner leaves on a session (failure reasons, recovery prompts). The
// Temporal workflow (internal/workflow) carries these decisions out; it
// decides nothing of its own beyond what Temporal tells it (a timeout, a
// cancellation).
//
// Statuses, events and paused_by markers are lifecycle's, read from its
// published rules package: the runner never spells them itself. It imports
// the standard library and lifecycle/rules only.
package domain
