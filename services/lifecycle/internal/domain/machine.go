package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// Event names a transition of the state machine.
type Event string

// The events: rules' table, typed.
const (
	EventStart                  Event = rules.EventStart
	EventPause                  Event = rules.EventPause
	EventResume                 Event = rules.EventResume
	EventSleep                  Event = rules.EventSleep
	EventBlockOnElicitation     Event = rules.EventBlockOnElicitation
	EventUnblockFromElicitation Event = rules.EventUnblockFromElicitation
	EventFail                   Event = rules.EventFail
	EventArchive                Event = rules.EventArchive
	EventUnarchiveToWaiting     Event = rules.EventUnarchiveToWaiting
	EventUnarchiveToFailed      Event = rules.EventUnarchiveToFailed
	EventUnarchiveToNeedsInput  Event = rules.EventUnarchiveToNeedsInput
)

// EventRestore is the event the named unarchive verb fires: rules'
// RestoreEvent. A restored session lands in needs_input whatever state it
// was archived from.
const EventRestore Event = rules.RestoreEvent

type edge struct {
	from   []Status
	to     Status
	guards []string
}

// machine is rules.Machine typed: every event, the states it may fire from,
// the state it leads to and the guards it must pass.
var machine = func() map[Event]edge {
	m := map[Event]edge{}
	for _, t := range rules.Machine() {
		e := edge{to: mustParseStatus(t.To), guards: t.Guards}
		for _, w := range t.From {
			e.from = append(e.from, mustParseStatus(w))
		}
		m[Event(t.Event)] = e
	}
	return m
}()

// Events lists every event in the spec's order.
var Events = func() []Event {
	names := rules.Events()
	out := make([]Event, len(names))
	for i, n := range names {
		out[i] = Event(n)
	}
	return out
}()

// ParseEvent reads an event name.
func ParseEvent(name string) (Event, error) {
	e := Event(name)
	if _, ok := machine[e]; !ok {
		names := strings.Join(rules.Events(), ", ")
		if name == "" {
			return "", fmt.Errorf("is required: one of %s", names)
		}
		return "", fmt.Errorf("unknown event %q; use one of %s", name, names)
	}
	return e, nil
}

// Target is the state an event leads to.
func (e Event) Target() Status { return machine[e].to }

// AllowedFrom reports whether the event may fire from s (before guards).
func (e Event) AllowedFrom(s Status) bool { return slices.Contains(machine[e].from, s) }

// guardChecks implement rules' guards by name: each returns why it refuses
// the session, or "".
var guardChecks = map[string]func(Session, Env) string{
	rules.GuardHasGitRoot: func(s Session, _ Env) string {
		if strings.TrimSpace(s.GitRoot) == "" {
			return "it has no git_root to clone; set one before starting it"
		}
		return ""
	},
	rules.GuardBlockedOnElicitation: func(s Session, _ Env) string {
		if !s.Markers.BlockedOnElicitation {
			return "it is not blocked on an elicitation (it is needs_input for another reason); resume it instead"
		}
		return ""
	},
	rules.GuardNoWakeAhead: func(_ Session, env Env) string {
		if env.Wakes.WakeAhead(env.Now) {
			return fmt.Sprintf("it is asleep until a wake-up at %s; the wake resumes it (cancel the wake-up to start it now)",
				env.Wakes.LatestOneTime.UTC().Format(time.RFC3339))
		}
		return ""
	},
}

// guard returns why an event the state allows is still refused, or "".
func guard(s Session, e Event, env Env) string {
	for _, name := range machine[e].guards {
		if reason := guardChecks[name](s, env); reason != "" {
			return reason
		}
	}
	return ""
}

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
