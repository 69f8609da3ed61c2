package domain

import (
	"fmt"
	"time"
)

// DefaultStaleAfter is the spec's stale-session age: HealthMonitorService's
// sweep archives everything untouched for seven days.
const DefaultStaleAfter = 7 * 24 * time.Hour

// StaleSessionSweep is the stale-session sweep as the archive line names
// it: "Zimmer's stale-session sweep (untouched for 7 days)".
func StaleSessionSweep(after time.Duration) Actor {
	return Actor{Kind: ActorSweep, Sweep: "stale-session sweep (untouched for " + spanWords(after) + ")"}
}

// spanWords says a sweep's age the way its timeline line does: whole days
// or hours in words, anything finer as Go writes it.
func spanWords(d time.Duration) string {
	day := 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	case d == time.Hour:
		return "1 hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	default:
		return d.String()
	}
}

// IsStale reports whether the stale-session sweep archives s: nothing has
// touched it (updated_at) since cutoff, and it is neither archived already
// nor running (a running session is at work, whatever its row says).
func IsStale(s Session, cutoff time.Time) bool {
	return s.UpdatedAt.Before(cutoff) && s.Status != StatusArchived && s.Status != StatusRunning
}

// ArchiveStale is the stale-session sweep's archive of s, decided under
// its lock: the system archive, which consults no queue guard and is never
// forced (so the messages it retires page), with the spec's line naming
// the sweep and its age. ok is false when s is no longer stale — a touch
// that committed after the sweep listed it wins — and nothing is written.
func ArchiveStale(s Session, cutoff time.Time, after time.Duration, env Env) (out Outcome, ok bool, err error) {
	if !IsStale(s, cutoff) {
		return Outcome{}, false, nil
	}
	out, err = Apply(s, Command{Event: EventArchive, Actor: StaleSessionSweep(after)}, env)
	if err != nil {
		return Outcome{}, false, err
	}
	return out, true, nil
}
