package domain

import (
	"fmt"
	"slices"
	"strings"
)

// Event names a transition of the state machine.
type Event string

// The events, exactly the spec's machine.
const (
	EventStart                  Event = "start"
	EventPause                  Event = "pause"
	EventResume                 Event = "resume"
	EventSleep                  Event = "sleep"
	EventBlockOnElicitation     Event = "block_on_elicitation"
	EventUnblockFromElicitation Event = "unblock_from_elicitation"
	EventFail                   Event = "fail"
	EventArchive                Event = "archive"
	EventUnarchiveToWaiting     Event = "unarchive_to_waiting"
	EventUnarchiveToFailed      Event = "unarchive_to_failed"
	EventUnarchiveToNeedsInput  Event = "unarchive_to_needs_input"
)

type edge struct {
	from []Status
	to   Status
}

// machine is the whole state machine: every event, the states it may fire
// from and the state it leads to. Guards live in guard.
var machine = map[Event]edge{
	EventStart:                  {from: []Status{StatusWaiting}, to: StatusRunning},
	EventPause:                  {from: []Status{StatusRunning}, to: StatusNeedsInput},
	EventResume:                 {from: []Status{StatusWaiting, StatusNeedsInput, StatusFailed}, to: StatusRunning},
	EventSleep:                  {from: []Status{StatusNeedsInput}, to: StatusWaiting},
	EventBlockOnElicitation:     {from: []Status{StatusRunning}, to: StatusNeedsInput},
	EventUnblockFromElicitation: {from: []Status{StatusNeedsInput}, to: StatusRunning},
	EventFail:                   {from: []Status{StatusWaiting, StatusRunning, StatusNeedsInput}, to: StatusFailed},
	EventArchive:                {from: []Status{StatusWaiting, StatusRunning, StatusNeedsInput, StatusFailed}, to: StatusArchived},
	EventUnarchiveToWaiting:     {from: []Status{StatusArchived}, to: StatusWaiting},
	EventUnarchiveToFailed:      {from: []Status{StatusArchived}, to: StatusFailed},
	EventUnarchiveToNeedsInput:  {from: []Status{StatusArchived}, to: StatusNeedsInput},
}

// Events lists every event in a stable order.
var Events = []Event{
	EventStart, EventPause, EventResume, EventSleep, EventBlockOnElicitation,
	EventUnblockFromElicitation, EventFail, EventArchive, EventUnarchiveToWaiting,
	EventUnarchiveToFailed, EventUnarchiveToNeedsInput,
}

// ParseEvent reads an event name.
func ParseEvent(name string) (Event, error) {
	e := Event(name)
	if _, ok := machine[e]; !ok {
		names := make([]string, len(Events))
		for i, ev := range Events {
			names[i] = string(ev)
		}
		if name == "" {
			return "", fmt.Errorf("is required: one of %s", strings.Join(names, ", "))
		}
		return "", fmt.Errorf("unknown event %q; use one of %s", name, strings.Join(names, ", "))
	}
	return e, nil
}

// Target is the state an event leads to.
func (e Event) Target() Status { return machine[e].to }

// AllowedFrom reports whether the event may fire from s (before guards).
func (e Event) AllowedFrom(s Status) bool { return slices.Contains(machine[e].from, s) }

// TransitionError says which event was refused in which state, and why.
type TransitionError struct {
	SessionID int64
	Event     Event
	From      Status
	Reason    string // set when a guard refused; empty when the state did
}

func (e *TransitionError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("cannot %s session %d: %s", e.Event, e.SessionID, e.Reason)
	}
	allowed := make([]string, 0, len(machine[e.Event].from))
	for _, s := range machine[e.Event].from {
		allowed = append(allowed, s.String())
	}
	return fmt.Sprintf("cannot %s session %d: it is %s, and %s is only possible from %s",
		e.Event, e.SessionID, e.From, e.Event, strings.Join(allowed, " or "))
}
