package domain

// Event is a fact the lifecycle context announces to the others. Events are
// recorded in the same transaction as the change that caused them.
type Event interface{ isEvent() }

// SessionCreated announces a new session.
type SessionCreated struct{ Session Session }

func (SessionCreated) isEvent() {}
