// Package rules is the lifecycle context's published rules, each written
// once: the session state machine (this file), the limits on what a
// caller may send (fields.go) and the shapes of what a session is cloned
// from and run by (source.go). The lifecycle domain builds its typed API
// from them; the gateway derives its MCP tool schemas and the OpenAPI
// document from them; the runner reads source.go's again before git runs;
// docs/state-machine.md is generated from them. It imports only the
// standard library so every one of those can.
package rules

import "slices"

//go:generate go run ./gendoc ../../../docs/state-machine.md

// The status words: a session's state as every surface spells it.
const (
	StatusWaiting    = "waiting"
	StatusRunning    = "running"
	StatusNeedsInput = "needs_input"
	StatusFailed     = "failed"
	StatusArchived   = "archived"
)

// Statuses are the status words in the order the spec presents them.
func Statuses() []string {
	return []string{StatusWaiting, StatusRunning, StatusNeedsInput, StatusFailed, StatusArchived}
}

// The paused_by words other contexts decide on: a session paused by one
// of them is not at rest by a person's hand.
const (
	// PausedByRecovery parks a session a recovery path took between its lost
	// turn and the next one.
	PausedByRecovery = "recovery"
	// PausedByMCPRetry parks a session whose agent's MCP connection failed,
	// until a retry resumes it.
	PausedByMCPRetry = "mcp_retry"
	// PausedByUser is a session a person paused by hand (Pause, Pause
	// Until): a bulk refresh leaves it at rest.
	PausedByUser = "user"
	// PausedBySpotQueue is a session asleep in the spot queue with no wake
	// armed (PauseIntoSpotQueue): the spot scheduler resumes it when a turn
	// slot is free, highest precedence first.
	PausedBySpotQueue = "spot_queue"
	// PausedByAuthOutage parks a session whose runtime's login hit a quota
	// or authentication wall: it sleeps (waiting, no wake armed) with
	// auth_outage_reason set until the login pool refills and the runner
	// resumes it (AuthOutageParkService in the spec).
	PausedByAuthOutage = "auth_outage"
)

// The reasons a session waits to run (its slot_wait).
const (
	// SlotWaitNoSlot: its turn waits for a free turn slot.
	SlotWaitNoSlot = "no_slot"
	// SlotWaitSpotQueue: it sleeps in the spot queue.
	SlotWaitSpotQueue = "spot_queue"
	// SlotWaitNoNodeSlot: the fleet has a free slot, but its turn's runner
	// node is at its own limit (RUNNER_TURN_SLOTS).
	SlotWaitNoNodeSlot = "no_node_slot"
)

// ViewRanked is ListSessions' view of the spot queue in run order.
const ViewRanked = "ranked"

// The events of the state machine.
const (
	EventStart                  = "start"
	EventPause                  = "pause"
	EventResume                 = "resume"
	EventSleep                  = "sleep"
	EventBlockOnElicitation     = "block_on_elicitation"
	EventUnblockFromElicitation = "unblock_from_elicitation"
	EventFail                   = "fail"
	EventArchive                = "archive"
	EventUnarchiveToWaiting     = "unarchive_to_waiting"
	EventUnarchiveToFailed      = "unarchive_to_failed"
	EventUnarchiveToNeedsInput  = "unarchive_to_needs_input"
)

// The guards: conditions on the session, beyond its state, that an event
// needs. The domain implements each by name.
const (
	GuardHasGitRoot           = "has_git_root"
	GuardBlockedOnElicitation = "blocked_on_elicitation"
	// GuardNoWakeAhead: a first start is refused while a one-time wake is
	// still ahead of the session — waiting is both "queued to spawn" and
	// "deliberately asleep", and the armed wake is the next event in its
	// life.
	GuardNoWakeAhead = "no_wake_ahead"
)

// Guard is a guard's name and what it requires, in words.
type Guard struct {
	Name string
	Doc  string
}

var guards = []Guard{
	{GuardHasGitRoot, "the session has a git_root to clone"},
	{GuardBlockedOnElicitation, "the session is needs_input because it is blocked on an elicitation, not for another reason (resume it instead)"},
	{GuardNoWakeAhead, "no one-time wake-up is still ahead of the session: one asleep until a chosen moment gets no first start (the wake resumes it)"},
}

// Guards lists every guard.
func Guards() []Guard { return slices.Clone(guards) }

// Transition is one row of the state machine: an event, the states it may
// fire from, the state it leads to, the guards it must also pass, and a
// sentence saying what it means (used in tool descriptions and docs).
type Transition struct {
	Event  string
	From   []string
	To     string
	Guards []string
	Doc    string
}

// machine is the whole state machine, exactly the spec's, in its order.
var machine = []Transition{
	{
		Event: EventStart, From: []string{StatusWaiting}, To: StatusRunning, Guards: []string{GuardHasGitRoot, GuardNoWakeAhead},
		Doc: "The agent's first turn begins (running_job_id names the job that owns the process).",
	},
	{
		Event: EventPause, From: []string{StatusRunning}, To: StatusNeedsInput,
		Doc: "The running turn ends and the session waits for input (paused_by says who stopped it); a pending sleep then executes.",
	},
	{
		Event: EventResume, From: []string{StatusWaiting, StatusNeedsInput, StatusFailed}, To: StatusRunning,
		Doc: "A new turn begins; with system_recovery it is a recovery path's resume, which keeps pending wake-ups.",
	},
	{
		Event: EventSleep, From: []string{StatusNeedsInput}, To: StatusWaiting,
		Doc: "The session rests until something wakes it.",
	},
	{
		Event: EventBlockOnElicitation, From: []string{StatusRunning}, To: StatusNeedsInput,
		Doc: "The agent asked its user a question mid-turn: the process stays alive and the session shows as needing input.",
	},
	{
		Event: EventUnblockFromElicitation, From: []string{StatusNeedsInput}, To: StatusRunning, Guards: []string{GuardBlockedOnElicitation},
		Doc: "The question was answered and the blocked turn goes on.",
	},
	{
		Event: EventFail, From: []string{StatusWaiting, StatusRunning, StatusNeedsInput}, To: StatusFailed,
		Doc: "The session cannot go on (failure_reason says why).",
	},
	{
		Event: EventArchive, From: []string{StatusWaiting, StatusRunning, StatusNeedsInput, StatusFailed}, To: StatusArchived,
		Doc: "The session moves to the trash, restorable until its trash_after.",
	},
	{
		Event: EventUnarchiveToWaiting, From: []string{StatusArchived}, To: StatusWaiting,
		Doc: "Restores a session archived while waiting.",
	},
	{
		Event: EventUnarchiveToFailed, From: []string{StatusArchived}, To: StatusFailed,
		Doc: "Restores a session archived while failed.",
	},
	{
		Event: EventUnarchiveToNeedsInput, From: []string{StatusArchived}, To: StatusNeedsInput,
		Doc: "Restores a session archived while running or needing input (a running one's process is gone).",
	},
}

// RestoreEvent is the event the named unarchive verb (REST
// POST /sessions/{id}/unarchive, MCP action_session unarchive) fires: a
// restored session lands in needs_input, ready for its next message,
// whatever state it was archived from, as the original's restore did.
// Choosing the target from the session's history belongs to an undo inside
// a few seconds of the archive (an operator console action, not built yet).
// The raw unarchive_to_* events keep their targets.
const RestoreEvent = EventUnarchiveToNeedsInput

// Machine returns the state machine's rows, in the spec's order. The result
// is a copy: changing it changes nothing.
func Machine() []Transition {
	out := make([]Transition, len(machine))
	for i, t := range machine {
		t.From, t.Guards = slices.Clone(t.From), slices.Clone(t.Guards)
		out[i] = t
	}
	return out
}

// Events are the machine's event names, in the spec's order.
func Events() []string {
	names := make([]string, len(machine))
	for i, t := range machine {
		names[i] = t.Event
	}
	return names
}

// Lookup returns the row of event, if it is one of the machine's.
func Lookup(event string) (Transition, bool) {
	for _, t := range machine {
		if t.Event == event {
			t.From, t.Guards = slices.Clone(t.From), slices.Clone(t.Guards)
			return t, true
		}
	}
	return Transition{}, false
}
