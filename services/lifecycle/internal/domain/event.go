package domain

// Fact is something that happened to a session that other contexts learn
// about. Facts are recorded in the same transaction as the change that
// caused them.
type Fact interface{ isFact() }

// SessionCreated announces a new session.
type SessionCreated struct{ Session Session }

// SessionTransitioned announces an applied transition and its effects.
type SessionTransitioned struct {
	Session Session
	Outcome Outcome
}

// SessionEdited announces a change of the session's editable fields.
type SessionEdited struct{ Session Session }

func (SessionCreated) isFact()      {}
func (SessionTransitioned) isFact() {}
func (SessionEdited) isFact()       {}

// TriggerArmedEvent announces a one-time trigger armed, to the triggers' timers
// (its Temporal workflow is started from it).
type TriggerArmedEvent struct{ Trigger Trigger }

// TriggerDueEvent announces a watcher that fired (now firing), to the triggers'
// timers, which deliver it at once.
type TriggerDueEvent struct{ Trigger Trigger }

// FirstTurnAsked asks the runner, again, for the first turn of a session
// that never started (a wake fired on it after its first start was
// refused while the wake was ahead). Session is as committed, prompt and all.
type FirstTurnAsked struct{ Session Session }

func (TriggerArmedEvent) isFact() {}
func (TriggerDueEvent) isFact()   {}
func (FirstTurnAsked) isFact()    {}
