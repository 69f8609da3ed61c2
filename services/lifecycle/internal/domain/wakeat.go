package domain

import (
	"fmt"
	"strings"
	"time"
	// The zone database is compiled in: which zones a wake may name is
	// the rule's, not the host's (a container without /usr/share/zoneinfo
	// would refuse America/New_York).
	_ "time/tzdata"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// ScheduleWakeUp's refusals carry the original's codes (rules'), the same
// from MCP and REST, so a script that branches on them works against
// either.
const (
	RefusedUnparseableWakeAt = rules.WakeRefusedUnparseable
	RefusedWakeAtTooSoon     = rules.WakeRefusedTooSoon
	RefusedNotWakeable       = rules.WakeRefusedNotWakeable
	RefusedMissingPrompt     = rules.WakeRefusedMissingPrompt
)

// DefaultWakeTimezone is the zone a wake_at without a timezone is read in.
const DefaultWakeTimezone = "UTC"

// WakeRefusal is a wake-up ScheduleWakeUp refuses: Code is the original's
// word for it, Field the argument at fault ("" when it is the session's
// state), Reason what was wrong and what to do.
type WakeRefusal struct {
	Code   string
	Field  string
	Reason string
}

func (e *WakeRefusal) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Unwrap makes a refusal by the session's state an ErrPrecondition.
func (e *WakeRefusal) Unwrap() error {
	if e.StateRefusal() {
		return ErrPrecondition
	}
	return nil
}

// StateRefusal reports whether the session's state, not the request,
// refused the wake.
func (e *WakeRefusal) StateRefusal() bool { return e.Field == "" }

// noTrigger ends a timing refusal: the caller knows nothing happened.
const noTrigger = "No trigger was created and no session state was changed."

// WakeAt is a wall-clock time read in a zone: the instant and the zone's
// name as given (stored and echoed back verbatim).
type WakeAt struct {
	At       time.Time
	Timezone string
}

// wakeAtExample is the shape a refusal shows.
const wakeAtExample = `an ISO-8601 date-time without an offset, e.g. "2030-04-15T09:30:00" (or "2030-04-15T09:30"), with timezone naming its IANA zone (e.g. "America/New_York"; default UTC)`

// ParseWakeAt reads text, a naive ISO-8601 date-time ("2030-04-15T09:30:00";
// "…T09:30" is the same to the minute) as wall-clock time in the IANA
// zone timezone ("" is UTC). RFC 3339 with a Z is UTC and takes no other
// zone. An offset, a date without a time, and a zone that is not IANA's
// are refused (unparseable_wake_at) saying what to send. The time is
// whole seconds, a fraction rounded up: a wake fires at a second, the echo
// is exact, and it is never earlier than the caller asked.
func ParseWakeAt(text, timezone string) (WakeAt, error) {
	zone := strings.TrimSpace(timezone)
	if zone == "" {
		zone = DefaultWakeTimezone
	}
	loc, zerr := loadZone(zone)
	s := strings.TrimSpace(text)
	date, clock, hasClock := strings.Cut(s, "T")
	refuse := func(format string, args ...any) (WakeAt, error) {
		return WakeAt{}, &WakeRefusal{Code: RefusedUnparseableWakeAt, Field: "wake_at", Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case s == "":
		return refuse("is required: give %s", wakeAtExample)
	case !hasClock:
		if _, err := time.Parse(time.DateOnly, date); err == nil {
			return refuse("%q is a date with no time: give the time of day too, %s", s, wakeAtExample)
		}
		return refuse("%q is not an ISO-8601 date-time: give %s", s, wakeAtExample)
	}
	utc := strings.HasSuffix(clock, "Z") || strings.HasSuffix(clock, "z")
	if utc {
		clock = clock[:len(clock)-1]
	}
	if strings.ContainsAny(clock, "+-") {
		return refuse("%q must not include a UTC offset: give the wall-clock time alone and name its zone in timezone (e.g. %q)",
			s, "America/New_York")
	}
	if zerr != nil {
		return WakeAt{}, &WakeRefusal{Code: RefusedUnparseableWakeAt, Field: "timezone", Reason: fmt.Sprintf(
			"%q is not an IANA time zone: give a name such as \"UTC\", \"Europe/Berlin\" or \"America/New_York\"", timezone)}
	}
	if utc && !isUTC(loc) {
		return refuse("%q ends in Z, which is UTC, but timezone is %q: drop the Z to mean %s wall-clock time, or leave timezone out",
			s, zone, zone)
	}
	var (
		at  time.Time
		err error
	)
	naive := date + "T" + clock
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if at, err = time.ParseInLocation(layout, naive, loc); err == nil {
			break
		}
	}
	if err != nil {
		return refuse("%q is not an ISO-8601 date-time: give %s", s, wakeAtExample)
	}
	if whole := at.Truncate(time.Second); whole.Before(at) {
		at = whole.Add(time.Second)
	}
	return WakeAt{At: at, Timezone: zone}, nil
}

// loadZone resolves an IANA zone name. "Local" is the server's zone,
// which means nothing to a caller elsewhere: refused like any unknown one.
func loadZone(name string) (*time.Location, error) {
	if name == "Local" {
		return nil, fmt.Errorf("the server's local zone is not a zone a caller can name")
	}
	return time.LoadLocation(name)
}

func isUTC(loc *time.Location) bool {
	_, offset := time.Date(2000, 1, 1, 0, 0, 0, 0, loc).Zone()
	_, summer := time.Date(2000, 7, 1, 0, 0, 0, 0, loc).Zone()
	return offset == 0 && summer == 0
}

// Format renders w as it was asked for: wall-clock time in its zone and
// the zone's name, "2030-04-15T09:30:00 (America/New_York)".
func (w WakeAt) Format() string {
	zone := w.Timezone
	if zone == "" {
		zone = DefaultWakeTimezone
	}
	loc, err := loadZone(zone)
	if err != nil {
		loc = time.UTC
	}
	return fmt.Sprintf("%s (%s)", w.At.In(loc).Format("2006-01-02T15:04:05"), zone)
}
