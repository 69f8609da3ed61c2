package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// SlotRepository keeps the fleet's turn slots and their line (LC-36). Each
// write is one pass of the scheduler under one fleet-wide lock: what it
// changes, then the free slots given to the head of the ranked line. now
// is read once the lock is held, so the passes' times (a grant's, a
// timeline line's) follow the order they ran in.
type SlotRepository interface {
	// AcquireSlot gives session sessionID's turn turnID the slot the
	// session holds, or puts the turn in line and runs a pass. A failed or
	// archived session is refused (*domain.PreconditionError). node is
	// the runner node the turn runs on ("": not said), held to its own
	// limit as well as the fleet's.
	AcquireSlot(ctx context.Context, sessionID int64, turnID, node string, now func() time.Time) (SlotAcquisition, error)
	// SetNodeSlots records a runner node's own limit (nil: none) and runs
	// a pass.
	SetNodeSlots(ctx context.Context, node string, limit *int, now func() time.Time) (domain.SlotPass, error)
	// ReleaseSlot gives the session's slot back, takes it out of the line,
	// and runs a pass.
	ReleaseSlot(ctx context.Context, sessionID int64, now func() time.Time) (domain.SlotPass, error)
	// PassSlots runs a pass.
	PassSlots(ctx context.Context, now func() time.Time) (domain.SlotPass, error)
	// SetSlotLimit sets the admin's limit (nil: the environment's) and
	// runs a pass.
	SetSlotLimit(ctx context.Context, admin *int, now func() time.Time) (domain.SlotPass, error)
	SlotUsage(ctx context.Context) (SlotUsage, error)
	// SlotLine is the line as it stands, ranked.
	SlotLine(ctx context.Context) ([]domain.SlotCandidate, error)
}

// SlotAcquisition is AcquireSlot's answer, and the pass it ran.
type SlotAcquisition struct {
	Granted bool
	// Wait is where the turn stands when not granted.
	Wait domain.SlotWait
	Pass domain.SlotPass
}

// SlotUsage is the slots as they stand.
type SlotUsage struct {
	Limit        domain.SlotLimit
	InUse        int
	WaitingTurns int
	SpotSleepers int
	// Nodes are the runner nodes' own limits and use (LC-38).
	Nodes domain.NodeSlots
}

// Slots are the turn-slot use cases and the spot scheduler: every pass
// that grants a spot sleeper a slot resumes it through the
// system-recovery resume, which keeps its wakes.
type Slots struct {
	Repo       SlotRepository
	Clock      clock.Clock
	Transition TransitionSession
	Logger     *slog.Logger
}

// spotScheduler names the scheduler on the lines it writes.
var spotScheduler = domain.Actor{Kind: domain.ActorSweep, Sweep: "spot scheduler"}

// Acquire asks a slot for turn turnID of session sessionID: granted, or
// where it waits.
func (uc Slots) Acquire(ctx context.Context, sessionID int64, turnID, node string) (SlotAcquisition, error) {
	if sessionID <= 0 || validation.Blank(turnID) {
		return SlotAcquisition{}, validation.Invalid("turn_id", "a slot is asked for a session's turn: give session_id and turn_id")
	}
	if err := domain.CheckNodeName("node", node, true); err != nil {
		return SlotAcquisition{}, err
	}
	a, err := uc.Repo.AcquireSlot(ctx, sessionID, turnID, node, uc.Clock.Now)
	if err != nil {
		return SlotAcquisition{}, err
	}
	uc.resume(ctx, a.Pass)
	return a, nil
}

// Release gives the session's slot back and answers the sessions whose
// waiting turns the pass gave one, for their workflows to take it now.
func (uc Slots) Release(ctx context.Context, sessionID int64) ([]int64, error) {
	if sessionID <= 0 {
		return nil, validation.Invalid("session_id", "give the id of the session whose turn ended")
	}
	p, err := uc.Repo.ReleaseSlot(ctx, sessionID, uc.Clock.Now)
	if err != nil {
		return nil, err
	}
	uc.resume(ctx, p)
	return grantedTurns(p), nil
}

// RunPass is the spot scheduler's backstop pass (the lifecycle-spot-queue
// schedule): it takes abandoned slots back and gives the free ones out.
// It answers how many sessions it gave a slot or resumed.
func (uc Slots) RunPass(ctx context.Context) (int, error) {
	p, err := uc.Repo.PassSlots(ctx, uc.Clock.Now)
	if err != nil {
		return 0, err
	}
	return len(p.Granted) + uc.resume(ctx, p), nil
}

// Usage says how the slots stand.
func (uc Slots) Usage(ctx context.Context) (SlotUsage, error) {
	return uc.Repo.SlotUsage(ctx)
}

// SetLimit sets the admin's limit (useEnvironment: drop it) and gives the
// slots it frees out at once.
func (uc Slots) SetLimit(ctx context.Context, limit *int, useEnvironment bool) (SlotUsage, error) {
	switch {
	case limit != nil && useEnvironment:
		return SlotUsage{}, validation.Invalid("use_environment", "give either limit or use_environment, not both")
	case limit == nil && !useEnvironment:
		return SlotUsage{}, validation.Invalid("limit", "give the new limit (0 or more), or use_environment: true to drop the admin's")
	case limit != nil:
		if err := domain.CheckTurnSlots("limit", *limit); err != nil {
			return SlotUsage{}, err
		}
	}
	p, err := uc.Repo.SetSlotLimit(ctx, limit, uc.Clock.Now)
	if err != nil {
		return SlotUsage{}, err
	}
	uc.resume(ctx, p)
	return uc.Repo.SlotUsage(ctx)
}

// SetNodeLimit records runner node node's own limit of concurrently
// running turns (nil: none beyond the fleet's), as the node reports it
// when it starts, and gives out what a raised limit frees.
func (uc Slots) SetNodeLimit(ctx context.Context, node string, limit *int) error {
	if err := domain.CheckNodeName("node", node, false); err != nil {
		return err
	}
	if limit != nil {
		if err := domain.CheckTurnSlots("turn_slots", *limit); err != nil {
			return err
		}
	}
	p, err := uc.Repo.SetNodeSlots(ctx, node, limit, uc.Clock.Now)
	if err != nil {
		return err
	}
	uc.resume(ctx, p)
	return nil
}

// Waits are the slot waits of the sessions in line.
func (uc Slots) Waits(ctx context.Context) (map[int64]domain.SlotWait, error) {
	line, err := uc.Repo.SlotLine(ctx)
	if err != nil {
		return nil, err
	}
	return domain.SlotWaits(line), nil
}

// Ranked is the line in the order it runs.
func (uc Slots) Ranked(ctx context.Context) ([]domain.SlotCandidate, error) {
	return uc.Repo.SlotLine(ctx)
}

// resume resumes the sleepers a pass let out of the spot queue, each on
// its own: one that left the queue since (resumed by hand, asleep on a new
// wake, archived) is left as it is. A resume that fails is logged; its
// grant comes back after domain.SlotGrace and the next pass tries again.
func (uc Slots) resume(ctx context.Context, p domain.SlotPass) int {
	resumed := 0
	for _, c := range p.Resume {
		r := domain.SessionRef{ID: c.SessionID}
		cmd := domain.Command{Actor: spotScheduler}
		_, err := uc.Transition.apply(ctx, r, "", func(s domain.Session, env domain.Env) (domain.Outcome, error) {
			return domain.LeaveSpotQueue(s, c, cmd, env)
		})
		var pre *domain.PreconditionError
		switch {
		case err == nil:
			resumed++
		case errors.As(err, &pre):
			uc.logger().DebugContext(ctx, "spot sleeper left the queue before the scheduler resumed it", "session_id", c.SessionID, "reason", pre.Reason)
		default:
			uc.logger().WarnContext(ctx, "spot scheduler could not resume a sleeper; the next pass tries again",
				"session_id", c.SessionID, "error", err)
		}
	}
	return resumed
}

func (uc Slots) logger() *slog.Logger {
	if uc.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return uc.Logger
}

// grantedTurns are the sessions whose waiting turns p gave a slot.
func grantedTurns(p domain.SlotPass) []int64 {
	var ids []int64
	for _, g := range p.Granted {
		if !g.Asleep {
			ids = append(ids, g.SessionID)
		}
	}
	return ids
}

// PauseIntoSpotQueue sleeps the session in the spot queue
// (domain.PauseIntoSpotQueue): a running turn is halted first, as Pause
// Until does; then a pass runs, so a free slot takes it at once.
func (uc Slots) PauseIntoSpotQueue(ctx context.Context, ref string, actor domain.Actor) (domain.Session, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Session{}, err
	}
	s, err := uc.Transition.Repo.Get(ctx, r)
	if err != nil {
		return domain.Session{}, err
	}
	if err := domain.CanPauseUntil(s); err != nil {
		return domain.Session{}, err // refused before a turn is halted; checked again under the lock
	}
	halted := false
	if s.Status == domain.StatusRunning && uc.Transition.Turns != nil {
		if err := uc.Transition.Turns.InterruptTurn(ctx, s.ID, "pause_into_spot_queue"); err == nil {
			halted = true
		} else {
			uc.logger().WarnContext(ctx, "the spot queue could not halt the running turn", "session_id", s.ID, "error", err)
		}
	}
	cmd := domain.Command{Actor: actor}
	out, err := uc.Transition.apply(ctx, r, actor.By, func(s domain.Session, env domain.Env) (domain.Outcome, error) {
		return domain.PauseIntoSpotQueue(s, halted, cmd, env)
	})
	if err != nil {
		return domain.Session{}, err
	}
	if _, err := uc.RunPass(ctx); err != nil {
		// Committed: the backstop schedule's pass takes it from here.
		uc.logger().WarnContext(ctx, "spot scheduler pass after a pause into the spot queue failed; its schedule runs it again",
			"session_id", out.Session.ID, "error", err)
		return out.Session, nil
	}
	// The pass may have resumed it already.
	return uc.Transition.Repo.Get(ctx, domain.SessionRef{ID: out.Session.ID})
}
