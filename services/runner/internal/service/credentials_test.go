package service_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// A node's runner names each turn's credential (node, its incarnation, the
// turn) and bounds its life; the turn's end revokes the turn's credentials
// through the workflow, and the runner's start asks lifecycle to revoke
// what the node's earlier incarnations minted, keeping its own.
func TestATurnsCredentialNamesItsTurnAndEndsWithIt(t *testing.T) {
	t.Parallel()
	n := startNode(t, func(string) *queuev1.DeliverNextMessageResponse { return nil })
	id := newSessionID()
	n.create(t, id, "@demo say hello")
	require.Eventually(t, func() bool { return n.lifecycle.count(id, rw.EventPause) > 0 },
		60*time.Second, 20*time.Millisecond, "the session never paused")

	f := n.lifecycle
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.sweeps, 1, "the runner's start swept its node once")
	sweep := f.sweeps[0]
	require.NotEmpty(t, sweep.GetNode())
	require.NotEmpty(t, sweep.GetIncarnation())
	require.Len(t, f.mints, 1)
	turn := fmt.Sprintf("session-%d/turn-1", id)
	require.True(t, proto.Equal(&lifecyclev1.CredentialTurn{Node: sweep.GetNode(), Incarnation: sweep.GetIncarnation(), TurnId: turn}, f.mints[0].GetTurn()),
		"the credential names this incarnation, which the sweep keeps: %v", f.mints[0].GetTurn())
	require.Equal(t, 7*24*time.Hour, f.mints[0].GetTtl().AsDuration(), "it lives no longer than a turn may")
	require.Len(t, f.turnRevokes, 1)
	require.Equal(t, turn, f.turnRevokes[0].GetTurnId(), "the turn's end revoked its credentials")
	require.Equal(t, fmt.Sprint(id), f.turnRevokes[0].GetSessionId())
}
