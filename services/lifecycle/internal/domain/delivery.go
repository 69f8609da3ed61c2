package domain

import (
	"fmt"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Deliveries: the one way a queued message or a follow-up becomes a turn.
// The queue asks; lifecycle decides from the session alone whether it may
// take the prompt now, and if so makes it the next turn under a job id it
// draws (Env.FreshJobID).

// DeliveryMode says what the session may be doing when a prompt is
// delivered as its next turn.
type DeliveryMode int

// Delivery modes.
const (
	// DeliverToIdle: the session is at rest (waiting, needs_input). It
	// resumes with the prompt, and the runner is asked for the turn.
	DeliverToIdle DeliveryMode = iota + 1
	// DeliverHandover: the session is running and its turn FromJobID just
	// ended. The turn hands over without a pause: no transition, and the
	// runner that asked runs the prompt itself (no turn request).
	DeliverHandover
	// DeliverAfterInterrupt: the session is running and its turn
	// (FromJobID, when given) was just halted on purpose. No transition;
	// the runner is asked for the turn.
	DeliverAfterInterrupt
)

func (m DeliveryMode) String() string {
	switch m {
	case DeliverToIdle:
		return "idle"
	case DeliverHandover:
		return "handover"
	case DeliverAfterInterrupt:
		return "after_interrupt"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// DeliveryRefusal is why a session cannot take a delivery now. A refusal is
// an answer, not an error: the queue keeps the message and tries later (or
// says why to whoever sent it).
type DeliveryRefusal int

// Refusals.
const (
	// RefusedBusy: the session is not in the state the mode needs, or a
	// handover comes from a turn that is not the running one.
	RefusedBusy DeliveryRefusal = iota + 1
	// RefusedClosed: archived or failed; nothing delivers to it.
	RefusedClosed
	// RefusedBlockedOnElicitation: its agent process is still alive,
	// mid-round-trip; a turn now would be a second process on one clone.
	RefusedBlockedOnElicitation
	// RefusedAuthOutage: parked for an auth or quota outage; a fresh turn
	// would hit the same wall (automatic deliveries only).
	RefusedAuthOutage
	// RefusedMCPRetry: paused for an MCP retry, which carries the original
	// prompt again (automatic deliveries only).
	RefusedMCPRetry
	// RefusedAsleep: waiting on a wake-up still ahead (or a watcher) it
	// armed; the wake's turn hands the queued message over, and a turn now
	// would wake it early (automatic deliveries only).
	RefusedAsleep
)

// PausedByMCPRetry is the paused_by of a session paused while a retry of a
// failing MCP server is scheduled.
const PausedByMCPRetry = rules.PausedByMCPRetry

// DeliveryRefused is a refused delivery: why, and why in words.
type DeliveryRefused struct {
	Reason  DeliveryRefusal
	Message string
}

// DeliverCommand asks for a prompt to become the session's next turn.
type DeliverCommand struct {
	// DeliveryID names the delivery; a second delivery with it changes
	// nothing and answers the first (the app enforces it under the lock).
	DeliveryID string
	Prompt     string
	// Goal becomes the session's goal; a blank one, or the goal it already
	// has, keeps it and says nothing (GoalReplaces).
	Goal string
	Mode DeliveryMode
	// FromJobID is, for a handover, the running job whose turn ended; for
	// a delivery after an interrupt, the running job whose turn was halted
	// (empty: whichever runs).
	FromJobID string
	// Automatic marks a drain's delivery rather than a caller's: the
	// outage and mcp_retry refusals apply only to it.
	Automatic bool
	// What names what is delivered, for the timeline ("queued message
	// #12", "a follow-up").
	What string
	// By is the principal that asked, named on the timeline (Attributed).
	By string
}

// Validate checks the command and reports every problem at once.
func (c DeliverCommand) Validate() error {
	var vs validation.Violations
	if c.DeliveryID == "" {
		vs.Add("delivery_id", "is required: it names the delivery, so a retry is answered rather than delivered twice")
	} else {
		checkText(&vs, "delivery_id", c.DeliveryID, MaxDeliveryIDChars, "")
	}
	checkPrompt(&vs, "prompt", c.Prompt, true)
	checkText(&vs, "goal", c.Goal, MaxGoalChars, "")
	switch c.Mode {
	case DeliverToIdle, DeliverAfterInterrupt:
	case DeliverHandover:
		if c.FromJobID == "" {
			vs.Add("from_job_id", "is required for a handover: the running job whose turn ended")
		}
	default:
		vs.Add("mode", "is required: idle, handover or after_interrupt")
	}
	checkText(&vs, "from_job_id", c.FromJobID, MaxRunningJobIDChars, "")
	checkText(&vs, "what", c.What, MaxDeliveryWhatChars, "")
	return vs.Err()
}

// Deliver decides a delivery: the refusal when the session cannot take the
// prompt now, else the outcome to write. An idle session resumes exactly as
// a restart does (the resume's bookkeeping: markers cleared, drain attempts
// included, wake-ups cancelled) under env.FreshJobID; a running one's turn
// is replaced without a transition. Either way the goal is set when given
// and a timeline line says what was delivered. The outcome asks the runner
// for the turn (AsksForTurn, with TurnPrompt) unless it is a handover,
// whose runner runs the prompt itself. It is pure.
func Deliver(s Session, cmd DeliverCommand, env Env) (Outcome, *DeliveryRefused, error) {
	if refused := refuseDelivery(s, cmd.Mode, cmd.FromJobID, cmd.Automatic, env.Wakes.Asleep(env.Now)); refused != nil {
		return Outcome{}, refused, nil
	}
	var out Outcome
	if cmd.Mode == DeliverToIdle {
		var err error
		out, err = Apply(s, Command{Event: EventResume, Actor: Actor{By: cmd.By}}, env)
		if err != nil {
			return Outcome{}, nil, fmt.Errorf("deliver to idle session %d: %w", s.ID, err)
		}
	} else {
		s.Markers.RunningJobID = env.FreshJobID
		s.UpdatedAt = env.Now
		out = Outcome{Session: s, From: s.Status, AsksForTurn: cmd.Mode == DeliverAfterInterrupt}
	}
	if out.AsksForTurn {
		out.TurnPrompt = cmd.Prompt
	}
	setsGoal := GoalReplaces(out.Session.Goal, cmd.Goal)
	if setsGoal {
		out.Session.Goal = cmd.Goal
	}
	out.Timeline = append(out.Timeline, TimelineEntry{Kind: TimelineNote, Message: Attributed(deliveryLine(cmd, setsGoal), cmd.By)})
	return out, nil, nil
}

// GoalReplaces says whether a goal a delivery carries becomes the
// session's: a blank one (empty or only white space) never replaces the
// goal the session has, and the same goal again changes nothing, so it
// says nothing on the timeline either.
func GoalReplaces(current, goal string) bool {
	return !validation.Blank(goal) && goal != current
}

// deliveryLine is the timeline line of a delivery: what became the turn,
// and how.
func deliveryLine(cmd DeliverCommand, setsGoal bool) string {
	what := cmd.What
	if what == "" {
		what = "a message"
	}
	line := "[Queue] delivered " + what + " as the next turn"
	switch cmd.Mode {
	case DeliverHandover:
		line += " (handed over as turn " + cmd.FromJobID + " ended)"
	case DeliverAfterInterrupt:
		line += " (after interrupting the running turn)"
	}
	if setsGoal {
		line += "; it set the session's goal"
	}
	return line
}

// RecordDrainAttempt counts one attempt of the queue's after-pause drain:
// only when the session is at rest and an automatic delivery could go to
// it, so the count is the budget of this idle spell (resume clears it).
// Otherwise it counts nothing and says why. asleep is whether the session
// sleeps on a wake it armed (Wakes.Asleep). It is pure.
func RecordDrainAttempt(s Session, asleep bool) (Session, *DeliveryRefused) {
	if refused := refuseDelivery(s, DeliverToIdle, "", true, asleep); refused != nil {
		return s, refused
	}
	s.Markers.DrainAttempts++
	return s, nil
}

// refuseDelivery says why s cannot take a delivery in mode now, or nil.
// Closed and blocked come first: no mode and no caller gets past them.
// asleep: s sleeps on a wake-up it armed, which only an automatic delivery
// (the queue's own drain) respects — a caller's follow-up is a deliberate
// resume, which cancels the wake (the spec's resume).
func refuseDelivery(s Session, mode DeliveryMode, fromJobID string, automatic, asleep bool) *DeliveryRefused {
	refuse := func(r DeliveryRefusal, format string, a ...any) *DeliveryRefused {
		return &DeliveryRefused{Reason: r, Message: fmt.Sprintf("session %d ", s.ID) + fmt.Sprintf(format, a...)}
	}
	m := s.Markers
	switch {
	case s.Status == StatusArchived:
		return refuse(RefusedClosed, "is archived: nothing is delivered to it until it is unarchived")
	case s.Status == StatusFailed:
		return refuse(RefusedClosed, "failed: restart it to give it a turn")
	case m.BlockedOnElicitation:
		return refuse(RefusedBlockedOnElicitation, "is blocked on an MCP elicitation: its agent process is still alive, and a turn now would start a second one")
	case automatic && m.AuthOutageReason != "":
		return refuse(RefusedAuthOutage, "is parked for an auth or quota outage (%s): a fresh turn would hit the same wall", m.AuthOutageReason)
	case automatic && m.PausedBy == PausedByMCPRetry:
		return refuse(RefusedMCPRetry, "was paused for an MCP retry, which carries its prompt again; delivering now would race it")
	case automatic && s.Status == StatusWaiting && asleep:
		return refuse(RefusedAsleep, "is asleep on a wake-up it armed: the wake's turn takes the queued message, and a turn now would wake it early")
	}
	switch mode {
	case DeliverToIdle:
		if s.Status == StatusRunning {
			return refuse(RefusedBusy, "is running: a delivery to an idle session waits for its turn to end")
		}
		if s.FirstTurnPending() {
			// Created with a prompt whose first turn has not started: a resume
			// now would take that turn's place and its prompt would never run.
			return refuse(RefusedBusy, "has not started its first turn yet: the message waits for that turn to end")
		}
	case DeliverHandover:
		if s.Status != StatusRunning {
			return refuse(RefusedBusy, "is %s, not running: there is no turn to hand over from", s.Status)
		}
		if m.RunningJobID != fromJobID {
			return refuse(RefusedBusy, "is running turn %q, not %q: only the turn that just ended hands over", m.RunningJobID, fromJobID)
		}
	case DeliverAfterInterrupt:
		if s.Status != StatusRunning {
			return refuse(RefusedBusy, "is %s, not running: deliver to it as an idle session", s.Status)
		}
		if fromJobID != "" && m.RunningJobID != fromJobID {
			// Another delivery replaced the halted turn first: the turn it
			// made runs whole, and this message waits for it.
			return refuse(RefusedBusy, "is running turn %q, not the interrupted %q: another delivery took its place", m.RunningJobID, fromJobID)
		}
	}
	return nil
}
