package domain

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Turn slots bound how many agent processes the fleet runs at once (LC-36).
// A slot is held by a session while its turn's process runs; a turn that
// finds none free waits in line, and the spot queue's sleepers wait behind
// the same line for the scheduler to resume them. One order decides who
// runs next, for every caller: RankSlotQueue.

// The reasons a session waits to run, as its slot_wait says them.
const (
	SlotWaitNoSlot     = rules.SlotWaitNoSlot
	SlotWaitSpotQueue  = rules.SlotWaitSpotQueue
	SlotWaitNoNodeSlot = rules.SlotWaitNoNodeSlot
)

// PausedBySpotQueue marks a session asleep in the spot queue.
const PausedBySpotQueue = rules.PausedBySpotQueue

// The sources of the slot limit.
const (
	SlotSourceAdmin       = "admin"
	SlotSourceEnvironment = "environment"
	SlotSourceUnlimited   = "unlimited"
)

// SlotGrace is how long a slot may stay with a session that is not running
// (nor blocked on an elicitation, whose process lives) before the scheduler
// takes it back: the span between a grant and the start or resume it is
// for is seconds; a slot held past this is one whose turn died without
// giving it back (its workflow terminated, its release lost for good).
const SlotGrace = 2 * time.Minute

// MaxTurnSlots bounds the limit an admin or the environment sets.
const MaxTurnSlots = 100_000

// SlotLimit is the fleet's limit of concurrently running turns and where
// it comes from; Slots is nil when there is none.
type SlotLimit struct {
	Slots  *int
	Source string
}

// EffectiveSlotLimit is the admin's limit when set, else the
// environment's, else none.
func EffectiveSlotLimit(admin, environment *int) SlotLimit {
	switch {
	case admin != nil:
		return SlotLimit{Slots: admin, Source: SlotSourceAdmin}
	case environment != nil:
		return SlotLimit{Slots: environment, Source: SlotSourceEnvironment}
	}
	return SlotLimit{Source: SlotSourceUnlimited}
}

// Free is how many slots are free with held of them in use.
func (l SlotLimit) Free(held int) int {
	if l.Slots == nil {
		return MaxTurnSlots
	}
	return max(0, *l.Slots-held)
}

// String is the limit in words, for the timeline.
func (l SlotLimit) String() string {
	if l.Slots == nil {
		return "unlimited"
	}
	return fmt.Sprint(*l.Slots)
}

// CheckTurnSlots refuses a limit that is not one.
func CheckTurnSlots(field string, n int) error {
	if n < 0 || n > MaxTurnSlots {
		return validation.Invalid(field, "%d is not a number of turn slots: give 0 to %d (0 holds every new turn back)", n, MaxTurnSlots)
	}
	return nil
}

// MaxNodeName bounds a runner node's name.
const MaxNodeName = 200

// CheckNodeName refuses a runner node's name that is not one: blank (unless
// optional, for a runner that did not say), too long, or with control
// characters.
func CheckNodeName(field, node string, optional bool) error {
	switch {
	case node == "" && optional:
		return nil
	case strings.TrimSpace(node) == "":
		return validation.Invalid(field, "give the runner node's name (RUNNER_NODE)")
	case len(node) > MaxNodeName:
		return validation.Invalid(field, "a node name is at most %d bytes", MaxNodeName)
	case strings.IndexFunc(node, unicode.IsControl) >= 0:
		return validation.Invalid(field, "a node name has no control characters")
	}
	return nil
}

// SlotCandidate is a session in line for a slot: a turn waiting for one,
// or a spot sleeper (Asleep) the scheduler resumes when one is its.
type SlotCandidate struct {
	SessionID  int64
	TurnID     string // the waiting turn's; "" for a sleeper
	Class      string
	Precedence int32
	Since      time.Time
	Asleep     bool
	// Node is the runner node a waiting turn runs on ("" for a sleeper,
	// whose node is not known until its turn asks).
	Node string
	// NodeFull says the turn waits for its node's limit, not the fleet's.
	NodeFull bool
}

// NodeSlots are the runner nodes' own limits (RUNNER_TURN_SLOTS, reported
// by each node) and the slots in use on each, by node. A node with no
// entry, or no limit, is bounded by the fleet's limit alone.
type NodeSlots map[string]NodeSlot

// NodeSlot is one node's limit (nil: none) and its slots in use.
type NodeSlot struct {
	Limit *int
	Held  int
}

// Full reports whether node has no free slot of its own.
func (n NodeSlots) Full(node string) bool {
	s, ok := n[node]
	return node != "" && ok && s.Limit != nil && s.Held >= *s.Limit
}

// RankSlotQueue sorts the line in the order it runs: priority sessions
// first, oldest wait first (a priority turn never waits behind spot work);
// then spot ones by precedence, highest first, then oldest wait, then id.
func RankSlotQueue(line []SlotCandidate) {
	slices.SortStableFunc(line, func(a, b SlotCandidate) int {
		ap, bp := a.Class != SchedulingSpot, b.Class != SchedulingSpot
		if ap != bp {
			if ap {
				return -1
			}
			return 1
		}
		if !ap {
			if c := cmp.Compare(b.Precedence, a.Precedence); c != 0 {
				return c
			}
		}
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return cmp.Compare(a.SessionID, b.SessionID)
	})
}

// SlotPass is one pass of the spot scheduler over the ranked line: the
// candidates given a slot now, the sleepers to resume, and the line that
// still waits, in order.
type SlotPass struct {
	Granted []SlotCandidate
	// Resume are the sleepers leaving the spot queue: those granted a slot,
	// and priority ones (made priority since they slept), which leave on
	// the next pass whatever the slots and wait in line as priority turns.
	Resume  []SlotCandidate
	Waiting []SlotCandidate
}

// PlanSlotPass gives the free slots to the head of the ranked line. A
// turn whose runner node is at its own limit is passed over (it waits,
// NodeFull), so the slot goes to the next in line on another node; nodes
// counts the grants as they are made.
func PlanSlotPass(limit SlotLimit, held int, nodes NodeSlots, ranked []SlotCandidate) SlotPass {
	free := limit.Free(held)
	nodes = maps.Clone(nodes)
	var p SlotPass
	for _, c := range ranked {
		c.NodeFull = false
		granted := false
		switch {
		case len(p.Granted) >= free:
		case nodes.Full(c.Node):
			c.NodeFull = true
		default:
			granted = true
			p.Granted = append(p.Granted, c)
			if s, ok := nodes[c.Node]; ok {
				s.Held++
				nodes[c.Node] = s
			}
		}
		switch {
		case c.Asleep && (granted || c.Class != SchedulingSpot):
			p.Resume = append(p.Resume, c)
		case !granted:
			p.Waiting = append(p.Waiting, c)
		}
	}
	return p
}

// SlotWait is why a session waits to run and where it stands in line.
type SlotWait struct {
	Reason   string
	Position int // 1-based, in the line's run order
	Since    time.Time
}

// SlotWaits are the waits of the line still waiting, by session.
func SlotWaits(waiting []SlotCandidate) map[int64]SlotWait {
	out := make(map[int64]SlotWait, len(waiting))
	for i, c := range waiting {
		reason := SlotWaitNoSlot
		switch {
		case c.Asleep:
			reason = SlotWaitSpotQueue
		case c.NodeFull:
			reason = SlotWaitNoNodeSlot
		}
		out[c.SessionID] = SlotWait{Reason: reason, Position: i + 1, Since: c.Since}
	}
	return out
}

// HeldSlot is a slot in use and the state of the session holding it.
type HeldSlot struct {
	SessionID  int64
	TurnID     string
	GrantedAt  time.Time
	Status     Status
	Blocked    bool // blocked on an elicitation: its process lives
	Class      string
	Precedence int32
}

// AwaitsResume reports whether the slot was granted to a spot sleeper that
// is still asleep: the pass that granted it did not get to resume it (its
// process died between the commit and the resume), so this pass does.
func (h HeldSlot) AwaitsResume() bool {
	return h.TurnID == "" && h.Status == StatusWaiting
}

// Abandoned reports whether no turn of the session can be using the slot
// any more, so the scheduler takes it back: its session is not running,
// nor blocked on an elicitation, and has not been for SlotGrace since the
// grant.
func (h HeldSlot) Abandoned(now time.Time) bool {
	if h.Status == StatusRunning || h.Blocked {
		return false
	}
	return now.Sub(h.GrantedAt) > SlotGrace
}

// SlotWaitLine is the timeline line of a turn that starts to wait: for
// the fleet's slots, or for its node's own (node, and how that stands).
func SlotWaitLine(turnID string, limit SlotLimit, held int, node string, nodes NodeSlots, w SlotWait) string {
	if w.Reason == SlotWaitNoNodeSlot {
		n := nodes[node]
		return fmt.Sprintf("[Slots] turn %s waits for a turn slot on runner node %s: %d of its %d in use (RUNNER_TURN_SLOTS); position %d in line",
			turnID, node, n.Held, derefInt(n.Limit), w.Position)
	}
	return fmt.Sprintf("[Slots] turn %s waits for a turn slot: %d of %s in use; position %d in line", turnID, held, limit, w.Position)
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// SlotGrantedLine is the timeline line of a waiting turn given a slot.
func SlotGrantedLine(turnID string, waited time.Duration) string {
	return fmt.Sprintf("[Slots] turn %s got a turn slot after waiting %s", turnID, waited.Round(time.Second))
}

// SpotResumeLine is the timeline line of a sleeper the scheduler resumes.
func SpotResumeLine(c SlotCandidate) string {
	if c.Class != SchedulingSpot {
		return "[Spot queue] the spot scheduler resumes the session: it is priority now"
	}
	return fmt.Sprintf("[Spot queue] the spot scheduler resumes the session: a turn slot is free and it is next in line (precedence %d)", c.Precedence)
}

// PauseIntoSpotQueue decides the Spot Queue choice of Pause Until: the
// session sleeps with no wake armed (a needs_input one now, a waiting one
// stays asleep, a running one whose turn was halted pauses and sleeps at
// once), becomes spot (the sweep would resume a priority sleeper on its
// very next pass), carries paused_by: spot_queue, which is what the spot
// scheduler looks for, and its own armed one-time wake-ups are superseded
// in the same commit ("not then, this instead"). A running session whose
// turn was not halted is refused: a deferred sleep would lose the marker
// to the turn's own pause.
func PauseIntoSpotQueue(s Session, halted bool, cmd Command, env Env) (Outcome, error) {
	if err := CanPauseUntil(s); err != nil {
		return Outcome{}, err
	}
	if s.Status == StatusRunning && !halted {
		return Outcome{}, fmt.Errorf("session %d's turn is still running and the runner did not halt it, so it was not paused into the spot queue; retry shortly: %w",
			s.ID, ErrUnavailable)
	}
	out, err := goToSleep(s, halted, cmd, env)
	if err != nil {
		return Outcome{}, err
	}
	out.Session.Markers.PausedBy = PausedBySpotQueue
	out.Session.SchedulingClass = SchedulingSpot
	out.Session.UpdatedAt = env.Now
	out.SupersedeOneTimeWakes = env.Wakes.OneTime > 0
	line := fmt.Sprintf("[Spot queue] paused into the spot queue: no wake armed; the spot scheduler resumes it when a turn slot is free (precedence %d)",
		s.Precedence)
	if s.SchedulingClass != SchedulingSpot {
		line += "; it is spot now"
	}
	if out.SupersedeOneTimeWakes {
		line += fmt.Sprintf("; superseding %d armed wake-up(s)", env.Wakes.OneTime)
	}
	out.Timeline = append(out.Timeline, TimelineEntry{Kind: TimelineNote, Message: Attributed(line, cmd.Actor.By)})
	return out, nil
}

// LeaveSpotQueue decides the spot scheduler's resume of a sleeper c named:
// a system-recovery resume (its wakes kept), refused with a
// PreconditionError when the session left the queue since the pass read it
// (resumed, re-armed on a wall-clock wake, archived).
func LeaveSpotQueue(s Session, c SlotCandidate, cmd Command, env Env) (Outcome, error) {
	if s.Status != StatusWaiting || s.Markers.PausedBy != PausedBySpotQueue || env.Wakes.OneTime > 0 {
		return Outcome{}, &PreconditionError{Reason: fmt.Sprintf(
			"session %d is no longer asleep in the spot queue: the spot scheduler leaves it as it is", s.ID)}
	}
	cmd.Event, cmd.SystemRecovery = EventResume, true
	out, err := Apply(s, cmd, env)
	if err != nil {
		return Outcome{}, err
	}
	c.Class = s.SchedulingClass
	out.Timeline = append(out.Timeline, TimelineEntry{Kind: TimelineNote, Message: Attributed(SpotResumeLine(c), cmd.Actor.By)})
	return out, nil
}
