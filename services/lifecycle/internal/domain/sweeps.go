package domain

import (
	"fmt"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// DefaultStaleAfter is the spec's stale-session age: HealthMonitorService's
// sweep archives everything untouched for seven days.
const DefaultStaleAfter = 7 * 24 * time.Hour

// StaleSessionSweep is the stale-session sweep as the archive line names
// it: "Zimmer's stale-session sweep (untouched for 7 days)".
func StaleSessionSweep(after time.Duration) Actor {
	return Actor{Kind: ActorSweep, Sweep: fmt.Sprintf(rules.StaleSessionSweep, spanWords(after))}
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

// DefaultElicitationExpiry is how old a block on an elicitation is before
// the expired-elicitation sweep takes it as stranded. The spec names the
// sweep's cadence (5 minutes), not an age; an hour leaves a human ample time
// to answer a live approval request, and no MCP round-trip is still open
// after that long.
const DefaultElicitationExpiry = time.Hour

// IsStrandedElicitation reports whether the expired-elicitation sweep
// clears s's block: it is needs_input on an elicitation block and nothing
// has touched it since cutoff (the block itself is such a touch, so the
// block is at least that old).
func IsStrandedElicitation(s Session, cutoff time.Time) bool {
	return s.Status == StatusNeedsInput && s.Markers.BlockedOnElicitation && s.UpdatedAt.Before(cutoff)
}

// ExpireElicitationBlock is the spec's clear_stale_elicitation_block!,
// decided under s's lock: the blocked_on_elicitation marker is stripped and
// the session stays needs_input — flipping it to running would make a
// phantom running session with nothing watching it, and there is no live
// round-trip to resume into — with a lost_elicitation marker the session
// page shows as a banner, and a timeline line. ok is false when s is no
// longer stranded (answered, resumed or touched since the sweep listed it).
func ExpireElicitationBlock(s Session, cutoff time.Time, expiry time.Duration, env Env) (out Outcome, ok bool) {
	if !IsStrandedElicitation(s, cutoff) {
		return Outcome{}, false
	}
	age := spanWords(expiry)
	s.Markers.BlockedOnElicitation = false
	s.Markers.LostElicitation = lose(s.Markers.Elicitation, LostStranded, env.Now)
	s.Markers.Elicitation = nil
	s.UpdatedAt = env.Now
	return Outcome{
		Session: s,
		From:    s.Status,
		Timeline: []TimelineEntry{{Kind: TimelineWarning, Message: "[Elicitation] Block expired: no answer for over " + age +
			", so Zimmer's expired-elicitation sweep cleared blocked_on_elicitation; the session stays needs_input (lost_elicitation set)"}},
	}, true
}

// HeartbeatPrompt is the turn a heartbeat nudge asks for: machine-written,
// and it says so.
const HeartbeatPrompt = "[AUTOMATED SYSTEM MESSAGE - NOT USER INPUT] Heartbeat: you have been waiting for input " +
	"for your heartbeat interval. Continue your work if there is more to do; otherwise end your turn."

// HeartbeatSweep names the heartbeat sweep on its timeline line.
const HeartbeatSweep = "heartbeat sweep"

// HeartbeatDue reports whether the heartbeat sweep nudges s at now: it is
// needs_input with its heartbeat on, has been at rest (untouched) for its
// heartbeat interval, and is not blocked on an elicitation (its agent
// process is alive: a turn would start a second one). A pending queued
// message, the sweep's other exclusion, is the queue's to say.
func HeartbeatDue(s Session, now time.Time) bool {
	return s.Status == StatusNeedsInput && s.HeartbeatEnabled && !s.Markers.BlockedOnElicitation &&
		!s.UpdatedAt.After(now.Add(-time.Duration(s.HeartbeatIntervalSeconds)*time.Second))
}

// Heartbeat is the heartbeat sweep's nudge of s, decided under its lock: a
// deliberate resume (its pending one-time wakes are cancelled, as any
// resume that is not a recovery) asking for a turn with HeartbeatPrompt,
// with a line saying why. ok is false when s is no longer due (touched,
// resumed, its heartbeat turned off since the sweep listed it).
func Heartbeat(s Session, env Env) (out Outcome, ok bool, err error) {
	if !HeartbeatDue(s, env.Now) {
		return Outcome{}, false, nil
	}
	out, err = Apply(s, Command{Event: EventResume, Actor: Actor{Kind: ActorSweep, Sweep: HeartbeatSweep}}, env)
	if err != nil {
		return Outcome{}, false, err
	}
	out.AsksForTurn, out.TurnPrompt = true, HeartbeatPrompt
	out.Timeline = append(out.Timeline, TimelineEntry{Kind: TimelineNote, Message: fmt.Sprintf(
		"[Heartbeat] Zimmer's %s resumed the session with the heartbeat prompt: needs_input for %s with its heartbeat on",
		HeartbeatSweep, spanWords(time.Duration(s.HeartbeatIntervalSeconds)*time.Second))})
	return out, true, nil
}
