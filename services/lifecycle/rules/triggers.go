package rules

import "time"

// WakeGraceSeconds is the grace window of a one-time wake: wake_me_up_later
// and Pause Until refuse a wake_at sooner than this from now (or in the
// past), which would fire before the session is asleep on it.
const WakeGraceSeconds = 30

// WakeGrace is WakeGraceSeconds as a duration.
const WakeGrace = WakeGraceSeconds * time.Second

// The kinds of trigger: a one-time wake at a time, and a watcher of another
// session's state.
const (
	TriggerKindOneTime      = "one_time"
	TriggerKindSessionState = "session_state"
)

// TriggerKinds are the kinds, one-time first.
func TriggerKinds() []string { return []string{TriggerKindOneTime, TriggerKindSessionState} }

// WatchableStates are the states a watcher
// (wake_me_up_when_session_changes_state) may wait for: the ones a session
// comes to rest in.
func WatchableStates() []string { return []string{StatusNeedsInput, StatusFailed, StatusArchived} }

// WakeableStatuses are the states a session may be put to sleep from with
// a wake armed (wake_me_up_later, Pause Until, a watcher): from failed or
// archived nothing can wake it, so the wake would point at a session no
// one can resume. The operator console offers Pause Until only in these.
func WakeableStatuses() []string { return []string{StatusNeedsInput, StatusRunning, StatusWaiting} }

// ErrorDomain is the google.rpc.ErrorInfo domain of lifecycle's refusals.
const ErrorDomain = "lifecycle.zimmer"

// ScheduleWakeUp's refusal codes, the original's, sent as an ErrorInfo's
// reason from wake_me_up_later and Pause Until alike.
const (
	// WakeRefusedUnparseable: wake_at or timezone cannot be read.
	WakeRefusedUnparseable = "unparseable_wake_at"
	// WakeRefusedTooSoon: wake_at is past or inside the grace window.
	WakeRefusedTooSoon = "wake_at_too_soon"
	// WakeRefusedNotWakeable: the session is in a state nothing can wake.
	WakeRefusedNotWakeable = "not_wakeable"
	// WakeRefusedMissingPrompt: the prompt is blank.
	WakeRefusedMissingPrompt = "missing_prompt"
)
