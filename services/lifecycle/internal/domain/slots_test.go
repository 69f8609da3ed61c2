package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func cand(id int64, class string, precedence int32, since time.Duration, asleep bool) domain.SlotCandidate {
	return domain.SlotCandidate{SessionID: id, Class: class, Precedence: precedence, Since: t0.Add(since), Asleep: asleep}
}

func lineOrder(line []domain.SlotCandidate) []int64 {
	out := make([]int64, len(line))
	for i, c := range line {
		out[i] = c.SessionID
	}
	return out
}

// The line runs priority first (oldest wait first), then spot by
// precedence, highest first, then oldest wait, then id: sleepers and
// waiting turns in one order.
func TestRankSlotQueue(t *testing.T) {
	t.Parallel()
	line := []domain.SlotCandidate{
		cand(1, domain.SchedulingSpot, 5, 0, false),
		cand(2, domain.SchedulingSpot, 9, time.Minute, true),
		cand(3, domain.SchedulingPriority, 0, 2*time.Minute, false),
		cand(4, domain.SchedulingSpot, 5, -time.Minute, true),
		cand(5, domain.SchedulingPriority, 0, time.Minute, false),
		cand(6, domain.SchedulingSpot, 5, 0, false),
	}
	domain.RankSlotQueue(line)
	require.Equal(t, []int64{5, 3, 2, 4, 1, 6}, lineOrder(line))
}

func TestPlanSlotPass(t *testing.T) {
	t.Parallel()
	ranked := []domain.SlotCandidate{
		cand(1, domain.SchedulingPriority, 0, 0, true), // made priority since it slept
		cand(2, domain.SchedulingSpot, 9, 0, false),
		cand(3, domain.SchedulingSpot, 8, 0, true),
		cand(4, domain.SchedulingSpot, 7, 0, true),
	}
	for _, tc := range []struct {
		name          string
		limit         *int
		held          int
		granted, left []int64
		resumed       []int64
	}{
		{name: "unlimited: everyone", limit: nil, granted: []int64{1, 2, 3, 4}, resumed: []int64{1, 3, 4}},
		{name: "full: a priority sleeper still leaves the queue", limit: ptr(2), held: 2, left: []int64{2, 3, 4}, resumed: []int64{1}},
		{name: "two free: the head", limit: ptr(3), held: 1, granted: []int64{1, 2}, left: []int64{3, 4}, resumed: []int64{1}},
		{name: "over the limit (lowered): nothing", limit: ptr(1), held: 3, left: []int64{2, 3, 4}, resumed: []int64{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			limit := domain.EffectiveSlotLimit(tc.limit, nil)
			p := domain.PlanSlotPass(limit, tc.held, nil, ranked)
			require.Equal(t, tc.granted, nilIfEmpty(lineOrder(p.Granted)))
			require.Equal(t, tc.left, nilIfEmpty(lineOrder(p.Waiting)))
			require.Equal(t, tc.resumed, nilIfEmpty(lineOrder(p.Resume)))
		})
	}
}

// A runner node at its own limit holds its turns back without holding
// the fleet's free slots from the next in line on another node; its turns
// say why they wait.
func TestPlanSlotPassKeepsEachNodesLimit(t *testing.T) {
	t.Parallel()
	on := func(c domain.SlotCandidate, node string) domain.SlotCandidate { c.Node = node; return c }
	ranked := []domain.SlotCandidate{
		on(cand(1, domain.SchedulingPriority, 0, 0, false), "a"),
		on(cand(2, domain.SchedulingPriority, 0, time.Second, false), "a"),
		on(cand(3, domain.SchedulingSpot, 9, 0, false), "b"),
		on(cand(4, domain.SchedulingSpot, 8, 0, false), "a"),
		cand(5, domain.SchedulingSpot, 7, 0, true), // a sleeper: its node is its turn's to say
		on(cand(6, domain.SchedulingSpot, 6, 0, false), "c"),
	}
	for _, tc := range []struct {
		name          string
		limit         *int
		held          int
		nodes         domain.NodeSlots
		granted, left []int64
		nodeFull      []int64
	}{
		{name: "no node limits: the fleet's alone", limit: ptr(3), granted: []int64{1, 2, 3}, left: []int64{4, 5, 6}},
		{name: "node a takes one more: the next slots pass it by", limit: ptr(4),
			nodes:   domain.NodeSlots{"a": {Limit: ptr(2), Held: 1}, "b": {Limit: nil}},
			granted: []int64{1, 3, 5, 6}, left: []int64{2, 4}, nodeFull: []int64{2, 4}},
		{name: "node a full, the fleet full too: the fleet's reason", limit: ptr(2), held: 1,
			nodes:   domain.NodeSlots{"a": {Limit: ptr(1), Held: 1}},
			granted: []int64{3}, left: []int64{1, 2, 4, 5, 6}, nodeFull: []int64{1, 2}},
		{name: "a node limit of 0 holds its turns back", limit: nil,
			nodes:   domain.NodeSlots{"c": {Limit: ptr(0)}},
			granted: []int64{1, 2, 3, 4, 5}, left: []int64{6}, nodeFull: []int64{6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := domain.PlanSlotPass(domain.EffectiveSlotLimit(tc.limit, nil), tc.held, tc.nodes, ranked)
			require.Equal(t, tc.granted, nilIfEmpty(lineOrder(p.Granted)))
			require.Equal(t, tc.left, nilIfEmpty(lineOrder(p.Waiting)))
			var full []int64
			for _, c := range p.Waiting {
				if c.NodeFull {
					full = append(full, c.SessionID)
				}
			}
			require.Equal(t, tc.nodeFull, full)
			waits := domain.SlotWaits(p.Waiting)
			for _, id := range tc.nodeFull {
				require.Equal(t, domain.SlotWaitNoNodeSlot, waits[id].Reason)
			}
		})
	}
}

func nilIfEmpty(ids []int64) []int64 {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// The Spot Queue sleeps the session with no wake, makes it spot, marks it
// and supersedes its own wall-clock wakes; a running one needs its turn
// halted first; one that never started is refused.
func TestPauseIntoSpotQueue(t *testing.T) {
	t.Parallel()
	started := t0
	idle := domain.Session{ID: 7, Status: domain.StatusNeedsInput, SchedulingClass: domain.SchedulingPriority, Precedence: 4, ElapsedSince: &started}
	env := domain.Env{Now: t0.Add(time.Hour), Wakes: domain.Wakes{OneTime: 2}}
	out, err := domain.PauseIntoSpotQueue(idle, false, domain.Command{}, env)
	require.NoError(t, err)
	require.Equal(t, domain.StatusWaiting, out.Session.Status)
	require.Equal(t, domain.SchedulingSpot, out.Session.SchedulingClass)
	require.Equal(t, domain.PausedBySpotQueue, out.Session.Markers.PausedBy)
	require.True(t, out.SupersedeOneTimeWakes)
	require.Contains(t, out.Timeline[len(out.Timeline)-1].Message, "superseding 2 armed wake-up(s)")

	running := idle
	running.Status = domain.StatusRunning
	_, err = domain.PauseIntoSpotQueue(running, false, domain.Command{}, env)
	require.ErrorIs(t, err, domain.ErrUnavailable, "not halted: refused, retry")
	out, err = domain.PauseIntoSpotQueue(running, true, domain.Command{}, env)
	require.NoError(t, err)
	require.Equal(t, domain.StatusWaiting, out.Session.Status, "halted: paused and asleep at once")
	require.Equal(t, domain.PausedBySpotQueue, out.Session.Markers.PausedBy)

	never := idle
	never.Status, never.ElapsedSince = domain.StatusWaiting, nil
	_, err = domain.PauseIntoSpotQueue(never, false, domain.Command{}, env)
	require.Error(t, err)
}

// The scheduler's resume keeps the wakes (system recovery) and refuses a
// session that left the queue since the pass read it.
func TestLeaveSpotQueue(t *testing.T) {
	t.Parallel()
	started := t0
	s := domain.Session{ID: 7, Status: domain.StatusWaiting, SchedulingClass: domain.SchedulingSpot, ElapsedSince: &started,
		Markers: domain.Markers{PausedBy: domain.PausedBySpotQueue}}
	c := domain.SlotCandidate{SessionID: 7, Class: domain.SchedulingSpot, Precedence: 3, Asleep: true}
	out, err := domain.LeaveSpotQueue(s, c, domain.Command{}, domain.Env{Now: t0, FreshJobID: "resume/x"})
	require.NoError(t, err)
	require.Equal(t, domain.StatusRunning, out.Session.Status)
	require.True(t, out.AsksForTurn)
	require.Empty(t, out.Session.Markers.PausedBy)
	require.Contains(t, out.Timeline[len(out.Timeline)-1].Message, "precedence 3")

	_, err = domain.LeaveSpotQueue(s, c, domain.Command{}, domain.Env{Now: t0, Wakes: domain.Wakes{OneTime: 1}})
	require.ErrorIs(t, err, domain.ErrPrecondition, "asleep on a wall-clock wake: left alone")
	s.Markers.PausedBy = ""
	_, err = domain.LeaveSpotQueue(s, c, domain.Command{}, domain.Env{Now: t0})
	require.ErrorIs(t, err, domain.ErrPrecondition)
}
