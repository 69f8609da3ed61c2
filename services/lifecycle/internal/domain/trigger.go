package domain

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/platform/workflowid"
)

// Triggers are a session's wake-ups: one-time schedules (a wall-clock
// wake) and watchers (wake when another session reaches a state). The row
// is the truth and Temporal the clock: a timer that fires into a trigger no
// longer armed does nothing.

// TriggerKind is what makes a trigger fire.
type TriggerKind string

// The kinds.
const (
	KindOneTime      TriggerKind = rules.TriggerKindOneTime
	KindSessionState TriggerKind = rules.TriggerKindSessionState
)

// TriggerSource is what armed a trigger.
type TriggerSource string

// The sources.
const (
	SourceWakeMeUpLater TriggerSource = "wake_me_up_later"
	SourcePauseUntil    TriggerSource = "pause_until"
	SourceWatch         TriggerSource = "watch"
)

// TriggerStatus is where a trigger stands: armed (what a session sleeps
// on), firing (its prompt is being delivered), fired or cancelled.
type TriggerStatus string

// The statuses.
const (
	TriggerArmed     TriggerStatus = "armed"
	TriggerFiring    TriggerStatus = "firing"
	TriggerFired     TriggerStatus = "fired"
	TriggerCancelled TriggerStatus = "cancelled"
)

// Trigger is one wake-up of a session.
type Trigger struct {
	ID        int64
	SessionID int64 // the session it wakes
	Kind      TriggerKind
	// FireAt is when a one-time trigger fires (zero for a watcher).
	FireAt time.Time
	// WatchedSessionID and States: a watcher's session and the states it
	// waits for.
	WatchedSessionID int64
	States           []Status
	// Prompt is the turn's prompt; "" is the standard nudge (TurnPrompt).
	Prompt string
	Source TriggerSource
	Status TriggerStatus
	// FiredState is the state a watcher fired on.
	FiredState  *Status
	CreatedAt   time.Time
	FiredAt     *time.Time
	CancelledAt *time.Time
}

// WakeGrace is the grace window: a wake must be at least this far ahead
// when it is armed (the spec: one inside it would fire-and-drop).
const WakeGrace = rules.WakeGrace

// MaxWakeDays bounds how far ahead a wake may be armed, in days: the
// words a refusal says it in (MaxWakeDelay is the same bound).
const MaxWakeDays = 366

// MaxWakeDelay bounds how far ahead a wake may be armed.
const MaxWakeDelay = MaxWakeDays * 24 * time.Hour

// DefaultWakePrompt is a one-time wake's turn when it names none.
const DefaultWakePrompt = "[Zimmer] Your scheduled wake-up fired; continue."

// TurnPrompt is the prompt the trigger's turn runs: its own, or the
// standard nudge for its kind when it has none (or a blank one, armed
// before blank prompts were refused: no turn runs a blank prompt).
func (t Trigger) TurnPrompt() string {
	if !validation.Blank(t.Prompt) {
		return t.Prompt
	}
	if t.Kind == KindSessionState {
		state := "in a state you watch"
		if t.FiredState != nil {
			state = t.FiredState.String()
		}
		return fmt.Sprintf("[Zimmer] Session #%d is now %s.", t.WatchedSessionID, state)
	}
	return DefaultWakePrompt
}

// WorkflowID names the Temporal workflow that times the trigger.
func (t Trigger) WorkflowID() string { return workflowid.Wake(t.SessionID, t.ID) }

// WakeRequest asks for a one-time wake: at WakeAt or after Delay ("90s",
// "15m", "2h"), exactly one of the two.
type WakeRequest struct {
	WakeAt *time.Time
	Delay  string
	Prompt string
	// DelayAllowed: wake_me_up_later takes a delay; Pause Until only a time.
	DelayAllowed bool
}

// FireAt validates r and returns when the wake fires: refused in the past,
// inside the grace window, with both or neither of wake_at and delay, and
// with a prompt over the limit, each naming its field.
func (r WakeRequest) FireAt(now time.Time) (time.Time, error) {
	var (
		vs validation.Violations
		at time.Time
	)
	checkPrompt(&vs, "prompt", r.Prompt, false)
	delay := strings.TrimSpace(r.Delay)
	switch {
	case delay != "" && !r.DelayAllowed:
		vs.Add("delay", "is not taken here: give wake_at, the time to wake")
	case r.WakeAt != nil && delay != "":
		vs.Add("wake_at", "give exactly one of wake_at and delay, not both")
		vs.Add("delay", "give exactly one of wake_at and delay, not both")
	case r.WakeAt == nil && delay == "" && r.DelayAllowed:
		vs.Add("wake_at", `is required, or give delay instead (e.g. "90s", "15m", "2h")`)
	case r.WakeAt == nil && delay == "":
		vs.Add("wake_at", "is required: the time to wake (RFC 3339)")
	case delay != "":
		d, err := time.ParseDuration(delay)
		switch {
		case err != nil:
			vs.Add("delay", `%q is not a duration: give a number and a unit, e.g. "90s", "15m", "2h"`, delay)
		case d <= 0:
			vs.Add("delay", "must be positive, got %s", d)
		case d > MaxWakeDelay:
			vs.Add("delay", "is more than %d days ahead; wake earlier and sleep again", MaxWakeDays)
		case d < WakeGrace:
			vs.Add("delay", "%s is inside the %s grace window: a wake must be at least %s ahead", d, WakeGrace, WakeGrace)
		default:
			at = now.Add(d)
		}
	default:
		switch w := r.WakeAt.UTC(); {
		case !w.After(now):
			vs.Add("wake_at", "%s is in the past (it is %s now)", w.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		case w.Before(now.Add(WakeGrace)):
			vs.Add("wake_at", "%s is inside the %s grace window: a wake must be at least %s ahead (it is %s now)",
				w.Format(time.RFC3339), WakeGrace, WakeGrace, now.UTC().Format(time.RFC3339))
		case w.After(now.Add(MaxWakeDelay)):
			vs.Add("wake_at", "is more than %d days ahead; wake earlier and sleep again", MaxWakeDays)
		default:
			at = w
		}
	}
	if err := vs.Err(); err != nil {
		return time.Time{}, err
	}
	return at, nil
}

// WatchableStates are the states a watcher can wait for (rules').
var WatchableStates = func() []Status {
	var out []Status
	for _, w := range rules.WatchableStates() {
		out = append(out, mustParseStatus(w))
	}
	return out
}()

// WatchRequest asks to wake session SessionID when WatchedSessionID next
// reaches one of States.
type WatchRequest struct {
	WatchedSessionID int64
	States           []string
	Prompt           string
}

// Validate checks r for the session it wakes and returns the states.
func (r WatchRequest) Validate(sessionID int64) ([]Status, error) {
	var vs validation.Violations
	switch {
	case r.WatchedSessionID <= 0:
		vs.Add("watched_session_id", "is required: the numeric id of the session to watch")
	case r.WatchedSessionID == sessionID:
		vs.Add("watched_session_id", "is the session itself; a session cannot watch itself")
	}
	var states []Status
	if len(r.States) == 0 {
		vs.Add("states", "give at least one of needs_input, failed, archived")
	}
	for _, w := range r.States {
		st, err := ParseStatus(w)
		switch {
		case err != nil || !slices.Contains(WatchableStates, st):
			vs.Add("states", "%q cannot be watched: give needs_input, failed or archived", w)
		case !slices.Contains(states, st):
			states = append(states, st)
		}
	}
	checkPrompt(&vs, "prompt", r.Prompt, false)
	if err := vs.Err(); err != nil {
		return nil, err
	}
	return states, nil
}

// canBeWoken refuses arming a wake for a session nothing can wake.
func canBeWoken(s Session) error {
	if s.Status == StatusFailed || s.Status == StatusArchived {
		return &PreconditionError{Reason: fmt.Sprintf(
			"session %d is %s: a wake-up armed now would point at a session nothing can wake; only needs_input, running and waiting sessions can be put to sleep (restart or restore it first)",
			s.ID, s.Status)}
	}
	return nil
}

// ArmWake decides a one-time wake's arming: a needs_input session sleeps
// now; a waiting one stays asleep; a running one sleeps when its turn ends
// (a pending sleep) — unless haltedForPause, Pause Until having halted its
// turn, which pauses it and sleeps it now. t is the trigger to insert;
// the outcome's timeline names its time.
func ArmWake(s Session, t Trigger, haltedForPause bool, cmd Command, env Env) (Outcome, error) {
	if err := canBeWoken(s); err != nil {
		return Outcome{}, err
	}
	var (
		out Outcome
		err error
	)
	switch s.Status {
	case StatusRunning:
		if !haltedForPause {
			out, err = Sleep(s, cmd, env)
			break
		}
		// The turn is halted: pause, whose deferred sleep then executes,
		// so the session is asleep before the request returns.
		s.Markers.PendingSleep, s.Markers.PendingSleepRequiresWake = true, false
		cmd.Event, cmd.PausedBy = EventPause, "user"
		out, err = Apply(s, cmd, env)
	case StatusNeedsInput:
		cmd.Event = EventSleep
		out, err = Apply(s, cmd, env)
	default: // waiting: asleep already
		s.UpdatedAt = env.Now
		out = Outcome{Session: s, From: s.Status}
	}
	if err != nil {
		return Outcome{}, err
	}
	out.Timeline = append(out.Timeline, TimelineEntry{Kind: TimelineNote, Message: Attributed(
		fmt.Sprintf("[Trigger] wake-up #%d armed for %s (%s)", t.ID, t.FireAt.UTC().Format(time.RFC3339), t.Source), cmd.Actor.By)})
	return out, nil
}

// ArmWatch decides a watcher's arming: the session's state is unchanged.
func ArmWatch(s Session, t Trigger, by string) (TimelineEntry, error) {
	if err := canBeWoken(s); err != nil {
		return TimelineEntry{}, err
	}
	states := make([]string, len(t.States))
	for i, st := range t.States {
		states[i] = st.String()
	}
	return TimelineEntry{Kind: TimelineNote, Message: Attributed(fmt.Sprintf(
		"[Trigger] watcher #%d armed: wakes this session when session #%d is next %s", t.ID, t.WatchedSessionID,
		strings.Join(states, " or ")), by)}, nil
}

// Watch is an armed watcher of a session: another session's trigger that
// fires when this one reaches one of States.
type Watch struct {
	TriggerID int64
	SessionID int64 // the session it wakes
	States    []Status
}

// firedStates maps FireTriggers' trigger to the state it fires.
var firedStates = map[string]Status{
	"session_needs_input": StatusNeedsInput,
	"session_failed":      StatusFailed,
	"session_archived":    StatusArchived,
}

// WatchesFired returns, for a FireTriggers effect, the state it
// fires and the armed watchers waiting for it. Each fires once.
func WatchesFired(e FireTriggers, watching []Watch) (Status, []Watch) {
	st, ok := firedStates[e.Trigger]
	if !ok {
		return 0, nil
	}
	var fired []Watch
	for _, w := range watching {
		if slices.Contains(w.States, st) {
			fired = append(fired, w)
		}
	}
	return st, fired
}

// ErrEarly is a timer that fired before its trigger's time: retried, never
// delivered early.
var ErrEarly = errors.New("the wake-up is not due yet")

// FireStep is what firing a trigger does under its session's lock.
type FireStep int

// The steps.
const (
	// FireNothing: the trigger is no longer armed (cancelled, or fired
	// already); the timer fires into nothing.
	FireNothing FireStep = iota
	// FireDeliver: deliver the prompt (the trigger is now firing).
	FireDeliver
	// FireCancel: the session cannot be woken; the trigger is cancelled
	// and the timeline says why.
	FireCancel
)

// Firing is the decision: the step, the trigger and the session as they
// become, and the timeline line.
type Firing struct {
	Step     FireStep
	Trigger  Trigger
	Session  Session
	Timeline []TimelineEntry
	// Write: the trigger (and the session's markers) change.
	Write bool
	// AsksFirstTurn: the session never started — its first start was
	// refused while this wake was ahead — so the runner is asked for its
	// first turn again, now that the wake is no longer armed; the wake's
	// prompt waits in the queue for that turn to end.
	AsksFirstTurn bool
}

// StartFiring decides the first step of firing t: armed → firing, never
// before its time (ErrEarly); a retry finds it firing and delivers again
// (the delivery is idempotent). An archived session gets nothing.
func StartFiring(s Session, t Trigger, now time.Time) (Firing, error) {
	f := Firing{Trigger: t, Session: s}
	switch t.Status {
	case TriggerFiring:
		f.Step = FireDeliver
		return f, nil
	case TriggerFired, TriggerCancelled:
		return f, nil
	}
	if t.Kind == KindOneTime && t.FireAt.After(now) {
		return Firing{}, fmt.Errorf("%w: wake-up #%d fires at %s, it is %s", ErrEarly, t.ID,
			t.FireAt.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	}
	if s.Status == StatusArchived {
		return CancelFiring(s, t, now, "fired on an archived session: nothing to do"), nil
	}
	f.Step, f.Write = FireDeliver, true
	f.Trigger.Status = TriggerFiring
	f.AsksFirstTurn = t.Kind == KindOneTime && s.FirstTurnPending()
	if s.Status == StatusRunning && s.Markers.PendingSleep {
		// The turn this wake was to sleep after is still running, and the
		// wake's prompt is queued behind it: sleep after it only if
		// something is still armed then, or the session would sleep past
		// the wake that just fired.
		f.Session.Markers.PendingSleepRequiresWake = true
	}
	return f, nil
}

// CancelFiring cancels t, which could not be delivered, and says why on
// the session's timeline.
func CancelFiring(s Session, t Trigger, now time.Time, why string) Firing {
	t.Status, t.CancelledAt = TriggerCancelled, ptrTime(now)
	return Firing{Step: FireCancel, Trigger: t, Session: s, Write: true, Timeline: []TimelineEntry{{
		Kind: TimelineNote, Message: fmt.Sprintf("[Trigger] %s #%d %s", t.noun(), t.ID, why),
	}}}
}

// FinishFiring records t fired: its prompt was delivered (or queued
// behind the running turn).
func FinishFiring(s Session, t Trigger, now time.Time, queued bool) Firing {
	if t.Status != TriggerFiring {
		return Firing{Trigger: t, Session: s}
	}
	what := "delivered as the session's turn"
	if queued {
		what = "queued behind the running turn"
	}
	t.Status, t.FiredAt = TriggerFired, ptrTime(now)
	return Firing{Step: FireDeliver, Trigger: t, Session: s, Write: true, Timeline: []TimelineEntry{{
		Kind: TimelineNote, Message: fmt.Sprintf("[Trigger] %s #%d fired: its prompt was %s", t.noun(), t.ID, what),
	}}}
}

// CancelTrigger disarms t by its session's request; a trigger that is not
// armed any more is NotFound (it fired or was cancelled).
func CancelTrigger(t Trigger, now time.Time, by string) (Trigger, TimelineEntry, error) {
	if t.Status != TriggerArmed {
		return Trigger{}, TimelineEntry{}, fmt.Errorf("trigger #%d is %s, not armed; list the session's triggers for the armed ones: %w",
			t.ID, t.Status, ErrNotFound)
	}
	t.Status, t.CancelledAt = TriggerCancelled, ptrTime(now)
	return t, TimelineEntry{Kind: TimelineNote, Message: Attributed(fmt.Sprintf("[Trigger] %s #%d cancelled", t.noun(), t.ID), by)}, nil
}

func (t Trigger) noun() string {
	if t.Kind == KindSessionState {
		return "watcher"
	}
	return "wake-up"
}
