package domain

import "github.com/zimmerhq/zimmer/services/lifecycle/rules"

// SessionSpec is what the runner needs to know of a session to clone it and
// run its agent.
type SessionSpec struct {
	ID           int64
	Runtime      string
	GitRoot      string
	Branch       string
	Subdirectory string
}

// SessionState is what the runner reads of a session before stopping its
// turn or recovering a lost one.
type SessionState struct {
	// Status is lifecycle's status word (rules.Status*), or StatusGone.
	Status               string
	BlockedOnElicitation bool
	PausedBy             string
	RunningJobID         string
	// AwaitingWake: asleep on purpose, a wake still ahead of it (asked only
	// of a waiting session).
	AwaitingWake bool
	// Prompt is the session's own prompt, and Spec what a turn needs: a
	// workflow started by the orphan sweep knows neither.
	Prompt string
	Spec   SessionSpec
}

// StatusGone is the status the runner reads for a session lifecycle no
// longer knows (deleted): at rest for good.
const StatusGone = "deleted"

// PausedByRecovery is the paused_by marker of a session a recovery parked
// between its lost turn and the next one.
const PausedByRecovery = rules.PausedByRecovery

// LeftRunning reports whether the session left running by someone else's
// hand: not running, and not merely blocked on an elicitation (which the
// process lives through). A late interrupt finds it running again.
func (s SessionState) LeftRunning() bool {
	return s.Status != rules.StatusRunning && !s.BlockedOnElicitation
}

// Arrival is the status event leaves a session in, by lifecycle's machine
// (the ZimmerStatus search attribute shows it; a pause that executes a
// pending sleep shows needs_input until the next event, as the workflow
// does not read the session back). "" for an event the machine lacks.
func Arrival(event string) string {
	t, _ := rules.Lookup(event)
	return t.To
}
