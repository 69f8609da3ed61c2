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
