package domain

import (
	"strings"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// PausedByRecovery is the paused_by of a session a recovery parked between
// its lost turn and the next: the recovery sweeps select on it.
const PausedByRecovery = rules.PausedByRecovery

// MaxRecoveryReasonChars bounds the reason AbandonRecovery records.
const MaxRecoveryReasonChars = 2000

// AbandonRecovery gives up recovering s automatically, as the spec's
// "Auto-continue gives up" says: the paused_by: recovery marker, which the
// sweeps select on, is dropped, and the reason is recorded
// (recovery_continue_abandoned) with a timeline line, once. The session
// rests where it is, for a human to restart. It is pure; abandoned is false
// when there was nothing to abandon (no recovery marker, or given up
// already).
func AbandonRecovery(s Session, reason, by string) (_ Session, line TimelineEntry, abandoned bool) {
	if s.Markers.PausedBy != PausedByRecovery && s.Markers.RecoveryAbandoned != "" {
		return s, TimelineEntry{}, false
	}
	if s.Markers.PausedBy != PausedByRecovery && s.Status != StatusNeedsInput && s.Status != StatusWaiting {
		return s, TimelineEntry{}, false
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "its recovery budget is spent"
	}
	if r := []rune(reason); len(r) > MaxRecoveryReasonChars {
		reason = string(r[:MaxRecoveryReasonChars]) + "…"
	}
	if s.Markers.PausedBy == PausedByRecovery {
		s.Markers.PausedBy = ""
	}
	s.Markers.RecoveryAbandoned = reason
	return s, TimelineEntry{Kind: TimelineWarning, Message: Attributed("[Recovery] Zimmer stopped recovering this session automatically: "+reason, by)}, true
}
