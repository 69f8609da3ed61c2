package domain

import "time"

// SessionChange is one transition of a session as its event stream
// recorded it (the stream's "transition" entry): what a watcher of every
// session's changes is told. EventID is the entry's id, which orders
// changes as they committed, so it is the watcher's cursor.
type SessionChange struct {
	EventID   int64
	SessionID int64
	// From and To are the statuses as the spec's words.
	From, To   string
	Events     []string
	OccurredAt time.Time
}
