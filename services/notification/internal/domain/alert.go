// Package domain holds the notification context's rules: the operator's
// notifications (what each says, when a pause earns its push, what a valid
// agent message and inbox listing look like) and operational alerts (what a
// valid raise looks like and when a raise pages). It imports only the
// standard library, the platform's validation error and lifecycle's status
// words (lifecycle/rules).
package domain

import (
	"time"
	"unicode/utf8"

	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Limits on what a raiser may send.
const (
	MaxDedupKeyChars = 200
	MaxSummaryChars  = 1_000
	MaxDetailsBytes  = 64 << 10
)

// DefaultDedupWindow is how long an alert absorbs repeats of its key when
// the configuration does not say (the spec's AlertService::DEDUP_WINDOW).
const DefaultDedupWindow = 15 * time.Minute

// Alert is one operational page and the repeats counted on it.
type Alert struct {
	ID          int64
	DedupKey    string
	Summary     string
	Details     map[string]any
	Occurrences int32
	FirstSeenAt time.Time
	LastSeenAt  time.Time
	// DedupUntil ends the window, fixed when the alert opens.
	DedupUntil time.Time
}

// Raise is a request to page an operator.
type Raise struct {
	DedupKey string
	Summary  string
	Details  map[string]any
	// DetailsBytes is the encoded size of Details, measured by the adapter
	// that decoded it.
	DetailsBytes int
}

// Validate checks the raise and reports every problem at once.
func (r Raise) Validate() error {
	var vs validation.Violations
	switch c := utf8.RuneCountInString(r.DedupKey); {
	case c == 0:
		vs.Add("dedup_key", "is required: name what repeats collapse on, e.g. the failing callback")
	case c > MaxDedupKeyChars:
		vs.Add("dedup_key", "is %d characters; the limit is %d", c, MaxDedupKeyChars)
	}
	switch c := utf8.RuneCountInString(r.Summary); {
	case c == 0:
		vs.Add("summary", "is required: one line saying what needs an operator")
	case c > MaxSummaryChars:
		vs.Add("summary", "is %d characters; the limit is %d — put the rest in details", c, MaxSummaryChars)
	}
	if r.DetailsBytes > MaxDetailsBytes {
		vs.Add("details", "is %d bytes encoded; the limit is %d", r.DetailsBytes, MaxDetailsBytes)
	}
	return vs.Err()
}

// Open is the alert a raise at now opens when nothing absorbs it: seen once,
// absorbing repeats of its key until now+window.
func (r Raise) Open(now time.Time, window time.Duration) Alert {
	details := r.Details
	if details == nil {
		details = map[string]any{}
	}
	return Alert{
		DedupKey:    r.DedupKey,
		Summary:     r.Summary,
		Details:     details,
		Occurrences: 1,
		FirstSeenAt: now,
		LastSeenAt:  now,
		DedupUntil:  now.Add(window),
	}
}

// Absorbs reports whether a counts fresh as a repeat instead of letting it
// page: the same key, and windows that overlap. It is the rule the alerts
// table's exclusion constraint (alerts_one_open_per_key) enforces, so
// concurrent raisers agree on it. With one clock it means a is open when
// fresh is raised: a.FirstSeenAt <= fresh.FirstSeenAt < a.DedupUntil. An
// alert opened by a raiser whose clock runs slightly ahead absorbs too.
func (a Alert) Absorbs(fresh Alert) bool {
	return a.DedupKey == fresh.DedupKey &&
		a.FirstSeenAt.Before(fresh.DedupUntil) && fresh.FirstSeenAt.Before(a.DedupUntil)
}

// Repeat counts one more raise at now on a. Summary and details stay those
// of the raise that paged.
func (a Alert) Repeat(now time.Time) Alert {
	a.Occurrences++
	if now.After(a.LastSeenAt) {
		a.LastSeenAt = now
	}
	return a
}

// Dedup decides what raising fresh does, given alerts already recorded:
// the earliest one that absorbs fresh counts it as a repeat (opened is
// false); when none does, fresh opens and pages (opened is true). Stores
// that serve concurrent raisers reach the same answer through a database
// constraint rather than by calling this.
func Dedup(recorded []Alert, fresh Alert) (alert Alert, opened bool) {
	var first *Alert
	for i := range recorded {
		if recorded[i].Absorbs(fresh) && (first == nil || recorded[i].FirstSeenAt.Before(first.FirstSeenAt)) {
			first = &recorded[i]
		}
	}
	if first == nil {
		return fresh, true
	}
	return first.Repeat(fresh.FirstSeenAt), false
}

// Page sizes for ListAlerts.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// PageSize validates a requested page size and applies the default.
func PageSize(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultPageSize, nil
	case n < 0 || n > MaxPageSize:
		var vs validation.Violations
		vs.Add("page_size", "is %d; use 1 to %d, or 0 for %d", n, MaxPageSize, DefaultPageSize)
		return 0, vs.Err()
	}
	return n, nil
}
