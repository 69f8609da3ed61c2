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
