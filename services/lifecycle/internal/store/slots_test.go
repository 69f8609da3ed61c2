package store_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
)

type slotBundle struct {
	sweepBundle
	slots app.Slots
}

func setupSlots(t *testing.T, limit *int) slotBundle {
	t.Helper()
	b := setupSweeps(t)
	b.clock.Set(sweepNow)
	return slotBundle{sweepBundle: b, slots: app.Slots{Repo: store.NewSlots(b.pool, limit), Clock: b.clock,
		Transition: b.sessions.Transition}}
}

func (b slotBundle) classed(t *testing.T, class string, precedence int32) domain.Session {
	t.Helper()
	s, err := b.sessions.Create.Handle(context.Background(), domain.NewSession{Prompt: "p", GitRoot: "g",
		SchedulingClass: class, Precedence: precedence})
	require.NoError(t, err)
	return s
}

func ptr(n int) *int { return &n }

// 20 turns asking at once for 3 slots from separate transactions: exactly 3
// are granted; the rest wait, each at a distinct place in line; releasing
// one lets exactly the head of the line in.
func TestSlotsAreExactUnderConcurrentAsks(t *testing.T) {
	t.Parallel()
	b := setupSlots(t, ptr(3))
	ctx := context.Background()
	ids := make([]int64, 20)
	for i := range ids {
		ids[i] = b.classed(t, domain.SchedulingSpot, int32(i)).ID
	}
	answers := make([]app.SlotAcquisition, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			var err error
			for range 20 { // a serialization failure is the caller's to retry
				answers[i], err = b.slots.Acquire(ctx, id, fmt.Sprintf("turn-%d", id), "")
				if err == nil {
					return
				}
			}
			require.NoError(t, err)
		})
	}
	wg.Wait()
	granted := 0
	for _, a := range answers {
		if a.Granted {
			granted++
		}
	}
	require.Equal(t, 3, granted, "never more than the limit")
	u, err := b.slots.Usage(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, u.InUse)
	require.Equal(t, 17, u.WaitingTurns)
	line, err := b.slots.Ranked(ctx)
	require.NoError(t, err)
	require.Len(t, line, 17)
	for i := 1; i < len(line); i++ {
		require.GreaterOrEqual(t, line[i-1].Precedence, line[i].Precedence, "highest precedence first")
	}
	var holder int64
	for i, a := range answers {
		if a.Granted {
			holder = ids[i]
			break
		}
	}
	next, err := b.slots.Release(ctx, holder)
	require.NoError(t, err)
	require.Equal(t, []int64{line[0].SessionID}, next, "the freed slot goes to the head of the line, and to it alone")
	a, err := b.slots.Acquire(ctx, line[0].SessionID, line[0].TurnID, "")
	require.NoError(t, err)
	require.True(t, a.Granted, "its next ask finds it held")
	a, err = b.slots.Acquire(ctx, line[1].SessionID, line[1].TurnID, "")
	require.NoError(t, err)
	require.False(t, a.Granted)
	require.Equal(t, domain.SlotWait{Reason: domain.SlotWaitNoSlot, Position: 1, Since: a.Wait.Since}, a.Wait)
	require.NotEmpty(t, b.timelineMatching(t, line[1].SessionID, "waits for a turn slot"), "the wait is on the timeline")
}

// A priority turn goes ahead of every spot turn already waiting.
func TestAPriorityTurnGoesFirst(t *testing.T) {
	t.Parallel()
	b := setupSlots(t, ptr(1))
	ctx := context.Background()
	holder := b.classed(t, domain.SchedulingSpot, 0)
	spot := b.classed(t, domain.SchedulingSpot, 50)
	prio := b.classed(t, domain.SchedulingPriority, 0)
	for _, s := range []domain.Session{holder, spot, prio} {
		_, err := b.slots.Acquire(ctx, s.ID, "t", "")
		require.NoError(t, err)
	}
	next, err := b.slots.Release(ctx, holder.ID)
	require.NoError(t, err)
	require.Equal(t, []int64{prio.ID}, next)
}

// An admin's limit overrides the environment's and is taken at once; a
// limit that is not one is refused.
func TestTheAdminLimitOverridesTheEnvironments(t *testing.T) {
	t.Parallel()
	b := setupSlots(t, ptr(0))
	ctx := context.Background()
	s := b.classed(t, domain.SchedulingPriority, 0)
	a, err := b.slots.Acquire(ctx, s.ID, "t", "")
	require.NoError(t, err)
	require.False(t, a.Granted, "0 slots hold every turn back")
	u, err := b.slots.SetLimit(ctx, ptr(2), false)
	require.NoError(t, err)
	require.Equal(t, domain.SlotSourceAdmin, u.Limit.Source)
	require.Equal(t, 1, u.InUse, "the raised limit was given out at once")
	_, err = b.slots.SetLimit(ctx, ptr(-1), false)
	require.ErrorContains(t, err, "not a number of turn slots")
	u, err = b.slots.SetLimit(ctx, nil, true)
	require.NoError(t, err)
	require.Equal(t, domain.SlotSourceEnvironment, u.Limit.Source)
}

// A slot whose session has not been running for SlotGrace is taken back by
// the next pass, with a warning on its timeline; a running one is not.
func TestAnAbandonedSlotComesBack(t *testing.T) {
	t.Parallel()
	b := setupSlots(t, ptr(1))
	ctx := context.Background()
	dead := b.session(t, sweepNow, domain.EventStart)
	_, err := b.slots.Acquire(ctx, dead.ID, "job", "")
	require.NoError(t, err)
	waiting := b.classed(t, domain.SchedulingPriority, 0)
	a, err := b.slots.Acquire(ctx, waiting.ID, "t", "")
	require.NoError(t, err)
	require.False(t, a.Granted)

	b.clock.Set(sweepNow.Add(domain.SlotGrace + time.Second))
	n, err := b.slots.RunPass(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "running: its slot is in use")

	_, err = b.sessions.Transition.Fire(ctx, strconv.FormatInt(dead.ID, 10), string(domain.EventPause), domain.Command{})
	require.NoError(t, err)
	b.clock.Set(sweepNow.Add(2*domain.SlotGrace + 2*time.Second))
	n, err = b.slots.RunPass(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "taken back and given to the waiting turn")
	require.NotEmpty(t, b.timelineMatching(t, dead.ID, "turn slot taken back"))
}

// The spot queue: a sleeper is resumed (system recovery) when a slot is
// free, highest precedence first; one asleep on a wall-clock wake is not
// in line at all; one made priority leaves on the next pass.
func TestTheSpotSchedulerResumesSleepersByPrecedence(t *testing.T) {
	t.Parallel()
	b := setupSlots(t, ptr(0))
	ctx := context.Background()
	sleeper := func(precedence int32) domain.Session {
		s := b.classed(t, domain.SchedulingPriority, precedence)
		ref := strconv.FormatInt(s.ID, 10)
		for _, e := range []domain.Event{domain.EventStart, domain.EventPause} {
			_, err := b.sessions.Transition.Fire(ctx, ref, string(e), domain.Command{RunningJobID: "job"})
			require.NoError(t, err)
		}
		out, err := b.slots.PauseIntoSpotQueue(ctx, ref, domain.Actor{By: "test"})
		require.NoError(t, err)
		require.Equal(t, domain.StatusWaiting, out.Status)
		require.Equal(t, domain.SchedulingSpot, out.SchedulingClass, "it is spot now")
		require.Equal(t, domain.PausedBySpotQueue, out.Markers.PausedBy)
		return out
	}
	low, high, onWake := sleeper(1), sleeper(9), sleeper(20)
	_, err := b.pool.Exec(ctx, `
		INSERT INTO wake_triggers (id, session_id, kind, fire_at, prompt, source, status, created_at)
		VALUES (900001, $1, 'one_time', $2, 'wake', 'pause_until', 'armed', $3)`, onWake.ID, sweepNow.Add(time.Hour), sweepNow)
	require.NoError(t, err)

	line, err := b.slots.Ranked(ctx)
	require.NoError(t, err)
	require.Equal(t, []int64{high.ID, low.ID}, ids(line), "the sleeper on a wake is not in line")

	_, err = b.slots.SetLimit(ctx, ptr(1), false)
	require.NoError(t, err)
	require.Equal(t, domain.StatusRunning, b.status(t, high.ID), "the free slot resumed the highest precedence")
	require.Equal(t, domain.StatusWaiting, b.status(t, low.ID))
	require.Equal(t, domain.StatusWaiting, b.status(t, onWake.ID))
	require.NotEmpty(t, b.timelineMatching(t, high.ID, "the spot scheduler resumes the session"))

	// Made priority, the other leaves on the next pass, slot or not.
	_, err = b.sessions.Update.Handle(ctx, strconv.FormatInt(low.ID, 10), domain.Patch{SchedulingClass: ptrTo(domain.SchedulingPriority)}, "test")
	require.NoError(t, err)
	_, err = b.slots.RunPass(ctx)
	require.NoError(t, err)
	require.Equal(t, domain.StatusRunning, b.status(t, low.ID))
	require.Equal(t, domain.StatusWaiting, b.status(t, onWake.ID), "a wall-clock wake outranks the queue")
}

func ids(line []domain.SlotCandidate) []int64 {
	out := make([]int64, len(line))
	for i, c := range line {
		out[i] = c.SessionID
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// Each runner node's own limit (LC-38), under concurrent asks: with room
// in the fleet, node a (2) and node b (1) run no more than theirs, their
// other turns wait saying it is their node's limit, and a node without a
// limit of its own takes the fleet's free slots; a slot released on a goes
// to a turn on a; a spot sleeper's grant whose turn's node is full goes
// back, and the turn waits in line.
func TestEachRunnerNodeKeepsItsOwnLimit(t *testing.T) {
	t.Parallel()
	b := setupSlots(t, ptr(10))
	ctx := context.Background()
	require.NoError(t, b.slots.SetNodeLimit(ctx, "node-a", ptr(2)))
	require.NoError(t, b.slots.SetNodeLimit(ctx, "node-b", ptr(1)))
	var lineOn = map[int64]string{}
	for i := range 12 {
		node := []string{"node-a", "node-a", "node-b", "node-c"}[i%4]
		lineOn[b.classed(t, domain.SchedulingSpot, int32(i)).ID] = node
	}
	answers := sync.Map{}
	var wg sync.WaitGroup
	for id, node := range lineOn {
		wg.Go(func() {
			var err error
			var a app.SlotAcquisition
			for range 20 { // a serialization failure is the caller's to retry
				if a, err = b.slots.Acquire(ctx, id, fmt.Sprintf("turn-%d", id), node); err == nil {
					answers.Store(id, a)
					return
				}
			}
			require.NoError(t, err)
		})
	}
	wg.Wait()
	granted := map[string]int{}
	answers.Range(func(k, v any) bool {
		id, a := k.(int64), v.(app.SlotAcquisition)
		if a.Granted {
			granted[lineOn[id]]++
		} else if lineOn[id] != "node-c" {
			require.Equal(t, domain.SlotWaitNoNodeSlot, a.Wait.Reason, "session %d on %s waits for its node", id, lineOn[id])
		}
		return true
	})
	require.Equal(t, map[string]int{"node-a": 2, "node-b": 1, "node-c": 3}, granted)
	line, err := b.slots.Ranked(ctx)
	require.NoError(t, err)
	require.Len(t, line, 6)
	waits := domain.SlotWaits(line)
	var heldOnA int64
	for id, node := range lineOn {
		if node != "node-a" {
			continue
		}
		if w, ok := waits[id]; ok {
			require.Equal(t, domain.SlotWaitNoNodeSlot, w.Reason, "the ranked view says why too")
			require.NotEmpty(t, b.timelineMatching(t, id, "waits for a turn slot on runner node node-a: 2 of its 2 in use"))
		} else {
			heldOnA = id
		}
	}

	// Released on a: the next on a gets it; b and c gain nothing.
	granted2, err := b.slots.Release(ctx, heldOnA)
	require.NoError(t, err)
	require.Len(t, granted2, 1)
	require.Equal(t, "node-a", lineOn[granted2[0]])

	// Raised on b: one more on b.
	require.NoError(t, b.slots.SetNodeLimit(ctx, "node-b", ptr(2)))
	u, err := b.slots.Usage(ctx)
	require.NoError(t, err)
	require.Equal(t, 2+2+3, u.InUse)
	require.Equal(t, domain.NodeSlots{"node-a": {Limit: ptr(2), Held: 2}, "node-b": {Limit: ptr(2), Held: 2}}, u.Nodes,
		"the admin's view names each node's limit and use")

	// A sleeper granted a slot (no node yet) whose turn then asks on the
	// full node a: the grant goes back and the turn waits.
	sleeper := b.classed(t, domain.SchedulingSpot, 50)
	_, err = b.pool.Exec(ctx, `INSERT INTO turn_slots (session_id, turn_id, granted_at) VALUES ($1, '', $2)`, sleeper.ID, sweepNow)
	require.NoError(t, err)
	a, err := b.slots.Acquire(ctx, sleeper.ID, "its-turn", "node-a")
	require.NoError(t, err)
	require.False(t, a.Granted, "node a is full")
	require.Equal(t, domain.SlotWaitNoNodeSlot, a.Wait.Reason)
	var onA int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM turn_slots WHERE node = 'node-a'`).Scan(&onA))
	require.Equal(t, 2, onA, "never more than node a's limit")

	// Refused: a node name that is not one, a limit that is not one.
	require.Error(t, b.slots.SetNodeLimit(ctx, " ", ptr(1)))
	require.Error(t, b.slots.SetNodeLimit(ctx, "node-a", ptr(-1)))
	_, err = b.slots.Acquire(ctx, sleeper.ID, "t", "bad\nnode")
	require.Error(t, err)
}

// A pass reads the clock only once it holds the fleet-wide lock, so a pass
// that waited for another dates its grants after the other's, never
// before (CI's TestTurnSlots saw a grant dated before the one a pass made
// just ahead of it).
func TestAPassReadsTheClockUnderTheLock(t *testing.T) {
	t.Parallel()
	b := setupSlots(t, ptr(3))
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT slots FROM turn_slot_limit FOR UPDATE`)
	require.NoError(t, err)

	var mu sync.Mutex
	read := false
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		read = true
		return sweepNow
	}
	done := make(chan error, 1)
	go func() {
		_, err := store.NewSlots(b.pool, ptr(3)).PassSlots(ctx, clock)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	require.False(t, read, "the clock was read while another pass held the lock")
	mu.Unlock()
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, <-done)
	require.True(t, read)
}
