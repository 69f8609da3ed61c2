package domain

import "time"

// Clock tells the time; domain and app code never call time.Now directly so
// tests control it.
type Clock interface{ Now() time.Time }

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns the current time, truncated to the microsecond Postgres keeps.
func (SystemClock) Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
