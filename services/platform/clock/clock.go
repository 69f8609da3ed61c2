// Package clock is how every Zimmer context reads the time: app use cases and
// stores hold a Clock, domain functions take the `now time.Time` it returns.
// Tests hold a Stub and move it explicitly. Stdlib only, so any layer may
// import it.
package clock

import (
	"sync"
	"time"
)

// Clock tells the current time.
type Clock interface{ Now() time.Time }

// System is the real clock. It answers in UTC, truncated to the microsecond,
// because that is what Postgres timestamptz stores: a time read back from the
// database then compares equal to the one that was written.
type System struct{}

// Now implements Clock.
func (System) Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Stub is a Clock that stands still until told to move. It is safe for
// concurrent use, so a test may move it while the code under test reads it.
type Stub struct {
	mu  sync.Mutex
	now time.Time
}

// NewStub returns a Stub stopped at now.
func NewStub(now time.Time) *Stub { return &Stub{now: now} }

// Now implements Clock.
func (s *Stub) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Set moves the clock to t.
func (s *Stub) Set(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = t
}

// Advance moves the clock forward by d and returns the new time.
func (s *Stub) Advance(d time.Duration) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
	return s.now
}
