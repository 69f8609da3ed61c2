package domain

import (
	"fmt"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// Refresh decides what refreshing one session does (the spec's "Manual
// refresh", one rule for the per-card control and the bulk ones): a stalled
// session — waiting, started before, and with no wake still ahead — and a
// failed one (the spec restarts it) resume deliberately with the continue
// nudge (a turn with prompt ""); so does a needs_input one refreshed in bulk
// (cmd.Actor.Bulk: "Refresh all"), unless a person paused it by hand; a
// needs_input one refreshed alone, a never-started
// one, one asleep on a wake still ahead of it, a running one, an archived
// one and one blocked on an elicitation (its process is alive) get the
// plain re-read — no turn — and the reason says why. asleep is
// awaiting_scheduled_wake (Wakes.Asleep, the bulk question's answer too),
// read under the session's lock (a read that failed counts as asleep: an
// error never wakes a sleeper).
func Refresh(s Session, asleep bool, cmd Command, env Env) (Outcome, string, error) {
	switch {
	case s.Status == StatusRunning:
		return Outcome{}, fmt.Sprintf("Session %d is running: its turn is live and streaming, so there is nothing to refresh.", s.ID), nil
	case s.Status == StatusArchived:
		return Outcome{}, fmt.Sprintf("Session %d is archived: nothing to refresh; restore it (unarchive) to give it a turn.", s.ID), nil
	case s.Markers.BlockedOnElicitation:
		return Outcome{}, fmt.Sprintf("Session %d is blocked on an MCP elicitation: its agent process is alive and waiting for an answer, and a nudge would start a second one.", s.ID), nil
	case s.ElapsedSince == nil:
		return Outcome{}, fmt.Sprintf("Session %d has never started: there is no conversation to continue; it is still queued for its first turn.", s.ID), nil
	case s.Status == StatusNeedsInput && !cmd.Actor.Bulk:
		return Outcome{}, fmt.Sprintf("Session %d needs input: its last turn ended waiting for an answer, so a refresh re-reads it and starts no turn; send a follow-up to give it one.", s.ID), nil
	case s.Status == StatusNeedsInput && s.Markers.PausedBy == rules.PausedByUser:
		return Outcome{}, fmt.Sprintf("Session %d was paused by hand: a bulk refresh leaves it at rest; send a follow-up to give it a turn.", s.ID), nil
	case s.Status == StatusWaiting && asleep:
		return Outcome{}, fmt.Sprintf("Session %d is asleep on purpose until a wake-up armed for it: a nudge would wake it early and cancel that wake-up, so it was left asleep.", s.ID), nil
	}
	cmd.Event = EventResume
	cmd.SystemRecovery = false
	out, err := Apply(s, cmd, env)
	if err != nil {
		return Outcome{}, "", err
	}
	return out, "", nil
}

// RefreshedMessage says what a refresh that resumed the session did.
func RefreshedMessage(out Outcome) string {
	return fmt.Sprintf("Session %d was %s: it resumes with the continue nudge.", out.Session.ID, out.From)
}
