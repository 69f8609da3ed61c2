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
			p := domain.PlanSlotPass(limit, tc.held, ranked)
			require.Equal(t, tc.granted, nilIfEmpty(lineOrder(p.Granted)))
			require.Equal(t, tc.left, nilIfEmpty(lineOrder(p.Waiting)))
			require.Equal(t, tc.resumed, nilIfEmpty(lineOrder(p.Resume)))
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
