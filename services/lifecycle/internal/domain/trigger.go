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
	// FireAt is when a one-time trigger fires (zero for a watcher), and
	// Timezone the IANA zone it was asked in, kept verbatim to echo it.
	FireAt   time.Time
	Timezone string
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

// WakeRequest asks for a one-time wake (ScheduleWakeUp, the one rule MCP's
// wake_me_up_later and REST's Pause Until share): at WakeAt, wall-clock
// time in Timezone (ParseWakeAt), or after Delay ("90s", "15m", "2h"),
// exactly one of the two.
type WakeRequest struct {
	WakeAt   string
	Timezone string
	Delay    string
	Prompt   string
	// DelayAllowed: wake_me_up_later takes a delay; Pause Until only a time.
	DelayAllowed bool
}

// FireAt validates r and returns when the wake fires and the zone it was
// asked in: an unreadable time is unparseable_wake_at, one in the past or
// inside the grace window wake_at_too_soon, a blank prompt missing_prompt
// (*WakeRefusal); both or neither of wake_at and delay, a bad delay and a
// prompt over the limit are refused naming their field.
func (r WakeRequest) FireAt(now time.Time) (WakeAt, error) {
	var vs validation.Violations
	delay := strings.TrimSpace(r.Delay)
	given := strings.TrimSpace(r.WakeAt) != ""
	switch {
	case delay != "" && !r.DelayAllowed:
		vs.Add("delay", "is not taken here: give wake_at, the time to wake")
	case given && delay != "":
		vs.Add("wake_at", "give exactly one of wake_at and delay, not both")
		vs.Add("delay", "give exactly one of wake_at and delay, not both")
	case !given && delay == "" && r.DelayAllowed:
		vs.Add("wake_at", `is required, or give delay instead (e.g. "90s", "15m", "2h")`)
	case !given && delay == "":
		vs.Add("wake_at", "is required: %s", wakeAtExample)
	}
	if err := vs.Err(); err != nil {
		return WakeAt{}, err
	}
	var at WakeAt
	if delay != "" {
		d, err := time.ParseDuration(delay)
		switch {
		case err != nil:
			vs.Add("delay", `%q is not a duration: give a number and a unit, e.g. "90s", "15m", "2h"`, delay)
		case d <= 0:
			vs.Add("delay", "must be positive, got %s", d)
		case d > MaxWakeDelay:
			vs.Add("delay", "is more than %d days ahead; wake earlier and sleep again", MaxWakeDays)
		case d < WakeGrace:
			return WakeAt{}, &WakeRefusal{Code: RefusedWakeAtTooSoon, Field: "delay", Reason: fmt.Sprintf(
				"%s is inside the %s grace window: a wake must be at least %s ahead. %s", d, WakeGrace, WakeGrace, noTrigger)}
		default:
			at = WakeAt{At: now.Add(d).UTC(), Timezone: DefaultWakeTimezone}
		}
	} else {
		var err error
		if at, err = ParseWakeAt(r.WakeAt, r.Timezone); err != nil {
			return WakeAt{}, err
		}
		switch w := at.At; {
		case !w.After(now):
			return WakeAt{}, &WakeRefusal{Code: RefusedWakeAtTooSoon, Field: "wake_at", Reason: fmt.Sprintf(
				"%s is in the past (it is %s now). %s", at.Format(), WakeAt{At: now, Timezone: at.Timezone}.Format(), noTrigger)}
		case w.Before(now.Add(WakeGrace)):
			return WakeAt{}, &WakeRefusal{Code: RefusedWakeAtTooSoon, Field: "wake_at", Reason: fmt.Sprintf(
				"%s is inside the %s grace window: a wake must be at least %s ahead (it is %s now). %s",
				at.Format(), WakeGrace, WakeGrace, WakeAt{At: now, Timezone: at.Timezone}.Format(), noTrigger)}
		case w.After(now.Add(MaxWakeDelay)):
			vs.Add("wake_at", "is more than %d days ahead; wake earlier and sleep again", MaxWakeDays)
		}
	}
	if r.Prompt != "" && validation.Blank(r.Prompt) {
		return WakeAt{}, &WakeRefusal{Code: RefusedMissingPrompt, Field: "prompt", Reason: "is blank (only white space): " +
			"send the wake's turn prompt, or leave it out for the standard wake-up nudge"}
	}
	checkPrompt(&vs, "prompt", r.Prompt, false)
	if err := vs.Err(); err != nil {
		return WakeAt{}, err
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

// WakeableStates are the states a wake may be armed in (rules').
var WakeableStates = func() []Status {
	var out []Status
	for _, w := range rules.WakeableStatuses() {
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
	case r.WatchedSessionID == 0:
		vs.Add("watched_session_id", "is required: the numeric id of the session to watch")
	case r.WatchedSessionID < 0:
		vs.Add("watched_session_id", "must be a positive session id, got %d", r.WatchedSessionID)
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

// canBeWoken refuses arming a wake for a session nothing can wake
// (not_wakeable).
func canBeWoken(s Session) error {
	if !slices.Contains(WakeableStates, s.Status) {
		return &WakeRefusal{Code: RefusedNotWakeable, Reason: fmt.Sprintf(
			"session %d is %s: a wake-up armed now would point at a session nothing can wake; only needs_input, running and waiting sessions can be put to sleep (restart or restore it first)",
			s.ID, s.Status)}
	}
	return nil
}

// CanPauseUntil refuses the operator's Pause Until where it is not offered
// (not_wakeable): a session that never started (its first turn is the
// spawn pipeline's, not a sleeper's) and a failed or archived one.
func CanPauseUntil(s Session) error {
	switch {
	case !slices.Contains(WakeableStates, s.Status):
		return &WakeRefusal{Code: RefusedNotWakeable, Reason: fmt.Sprintf(
			"session %d is %s: it cannot be paused from here; only needs_input, running and waiting sessions can be paused until a time (restart or restore it first)",
			s.ID, s.Status)}
	case s.ElapsedSince == nil && s.Status != StatusRunning:
		return &WakeRefusal{Code: RefusedNotWakeable, Reason: fmt.Sprintf(
			"session %d has never started: it cannot be paused from here; wait for its first turn to begin, then pause it", s.ID)}
	}
	return nil
}

// goToSleep puts s to sleep for a trigger armed for it: a needs_input
// session sleeps now; a waiting one stays asleep; a running one sleeps
// when its turn ends (a pending sleep) — unless haltedForPause, Pause
// Until having halted its turn, which pauses it and sleeps it now.
func goToSleep(s Session, haltedForPause bool, cmd Command, env Env) (Outcome, error) {
	switch s.Status {
	case StatusRunning:
		if !haltedForPause {
			return Sleep(s, cmd, env)
		}
		// The turn is halted: pause, whose deferred sleep then executes,
		// so the session is asleep before the request returns.
		s.Markers.PendingSleep, s.Markers.PendingSleepRequiresWake = true, false
		cmd.Event, cmd.PausedBy = EventPause, rules.PausedByUser
		return Apply(s, cmd, env)
	case StatusNeedsInput:
		cmd.Event = EventSleep
		return Apply(s, cmd, env)
	default: // waiting: asleep already
		s.UpdatedAt = env.Now
		return Outcome{Session: s, From: s.Status}, nil
	}
}

// ArmWake decides a one-time wake's arming: the session goes to sleep
// (goToSleep) and, for a Pause Until, the session's own armed one-time
// wake-ups in supersedes are cancelled by the same commit. t is the
// trigger to insert; the outcome's timeline names its time and zone and
// what it superseded.
func ArmWake(s Session, t Trigger, supersedes []int64, haltedForPause bool, cmd Command, env Env) (Outcome, error) {
	if err := canBeWoken(s); err != nil {
		return Outcome{}, err
	}
	if t.Source == SourcePauseUntil {
		if err := CanPauseUntil(s); err != nil {
			return Outcome{}, err
		}
	}
	out, err := goToSleep(s, haltedForPause, cmd, env)
	if err != nil {
		return Outcome{}, err
	}
	line := fmt.Sprintf("[Trigger] wake-up #%d armed for %s (%s)", t.ID, WakeAt{At: t.FireAt, Timezone: t.Timezone}.Format(), t.Source)
	if len(supersedes) > 0 {
		line += ", superseding " + WakeUpList(supersedes)
	}
	out.Timeline = append(out.Timeline, TimelineEntry{Kind: TimelineNote, Message: Attributed(line, cmd.Actor.By)})
	return out, nil
}

// WakeUpList names wake-ups by id: "wake-up #3", "wake-ups #3, #5".
func WakeUpList(ids []int64) string {
	refs := make([]string, len(ids))
	for i, id := range ids {
		refs[i] = fmt.Sprintf("#%d", id)
	}
	if len(ids) == 1 {
		return "wake-up " + refs[0]
	}
	return "wake-ups " + strings.Join(refs, ", ")
}

// ArmWatch decides a watcher's arming: refused when the watched session
// does not exist (watched is nil), will not transition further (failed or
// archived), or is already in a state watched for; otherwise the session
// goes to sleep as for a wake (goToSleep), and the timeline says what
// wakes it.
func ArmWatch(s Session, t Trigger, watched *Status, cmd Command, env Env) (Outcome, error) {
	if err := canBeWoken(s); err != nil {
		return Outcome{}, err
	}
	switch {
	case watched == nil:
		return Outcome{}, validation.Invalid("watched_session_id", "session %d does not exist: give the numeric id of an existing session",
			t.WatchedSessionID)
	case *watched == StatusFailed || *watched == StatusArchived:
		return Outcome{}, validation.Invalid("watched_session_id", "session %d is %s and will not transition further: nothing would fire the watcher",
			t.WatchedSessionID, *watched)
	case slices.Contains(t.States, *watched):
		return Outcome{}, validation.Invalid("states", "session %d is already %s: a watcher fires on the next transition into a state, "+
			"so act on it now instead of watching for it", t.WatchedSessionID, *watched)
	}
	out, err := goToSleep(s, false, cmd, env)
	if err != nil {
		return Outcome{}, err
	}
	states := make([]string, len(t.States))
	for i, st := range t.States {
		states[i] = st.String()
	}
	out.Timeline = append(out.Timeline, TimelineEntry{Kind: TimelineNote, Message: Attributed(fmt.Sprintf(
		"[Trigger] watcher #%d armed: wakes this session when session #%d is next %s", t.ID, t.WatchedSessionID,
		strings.Join(states, " or ")), cmd.Actor.By)})
	return out, nil
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
