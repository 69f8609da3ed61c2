package workflow_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// A first turn that finds no turn slot free waits for one in waiting — no
// start, no process — asking again at each look, and starts once granted;
// it gives the slot back when it ends.
func TestATurnWaitsForItsSlotBeforeItStarts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.lifecycle.slotWaits = 2
	h.onTurns(time.Minute, exited(0))
	start := h.env.Now()
	h.run(1, first("@demo say hi"))

	require.Equal(t, []string{rw.EventStart, rw.EventPause}, h.events())
	require.Len(t, h.turns, 1)
	asks := h.lifecycle.slotAsks
	require.Len(t, asks, 3, "asked, waited twice, then granted")
	for _, a := range asks {
		require.Equal(t, rw.SlotRequest{SessionID: sessionID, TurnID: "session-7/turn-1", Node: "n1"}, a, "the ask names the node holding the clone (LC-38)")
	}
	require.Equal(t, []rw.SlotRequest{{SessionID: sessionID, TurnID: "session-7/turn-1"}}, h.lifecycle.slotReleases,
		"the slot is given back once, when the turn ended")
	require.GreaterOrEqual(t, h.env.Now().Sub(start), 2*5*time.Second+time.Minute, "two looks of 5 s, then the minute's turn")
}

// A release elsewhere tells the waiting turn its slot is free (SignalSlot):
// it asks again at once, not at its next look.
func TestASlotSignalWakesTheWaitingTurnAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.lifecycle.slotWaits = 1
	h.onTurns(time.Minute, exited(0))
	start := h.env.Now()
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(rw.SignalSlot, nil) }, time.Second)
	h.run(1, first("@demo say hi"))

	require.Len(t, h.lifecycle.slotAsks, 2)
	require.Len(t, h.turns, 1)
	require.Less(t, h.env.Now().Sub(start), 5*time.Second+time.Minute, "the nudge, not the 5 s look, let it go")
}

// A session lifecycle gives no slot (archived while its turn waited) runs
// no turn: no start, no process; its place in line is given back.
func TestARefusedSlotRunsNoTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.lifecycle.slotRefused = true
	h.onTurns(time.Minute)
	h.run(1, first("@demo say hi"))

	require.Empty(t, h.events(), "no start")
	require.Empty(t, h.turns, "no process")
	require.Len(t, h.lifecycle.slotReleases, 1, "its place in line is given back")
}
