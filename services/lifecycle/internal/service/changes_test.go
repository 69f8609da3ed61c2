package service_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// watch opens WatchSessionChanges as the console does and returns its
// first position and a channel of what follows.
func watch(t *testing.T, client lifecyclev1.LifecycleServiceClient, after *int64) (int64, <-chan *lifecyclev1.SessionChange) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := client.WatchSessionChanges(ctx, &lifecyclev1.WatchSessionChangesRequest{AfterEventId: after})
	require.NoError(t, err)
	first, err := stream.Recv()
	require.NoError(t, err)
	require.Nil(t, first.GetChange(), "the first message says where the watch starts")
	changes := make(chan *lifecyclev1.SessionChange, 1024)
	go func() {
		defer close(changes)
		for {
			resp, err := stream.Recv()
			if err != nil {
				return
			}
			if resp.GetPosition() != resp.GetChange().GetEventId() {
				t.Errorf("position %d is not the change's id %d", resp.GetPosition(), resp.GetChange().GetEventId())
			}
			changes <- resp.GetChange()
		}
	}()
	return first.GetPosition(), changes
}

func nextChange(t *testing.T, changes <-chan *lifecyclev1.SessionChange, within time.Duration) *lifecyclev1.SessionChange {
	t.Helper()
	select {
	case c, ok := <-changes:
		require.True(t, ok, "the watch ended")
		return c
	case <-time.After(within):
		t.Fatalf("no change within %s", within)
		return nil
	}
}

func TestWatchSessionChangesStreamsTransitionsAndResumesFromItsCursor(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	console := lifecyclev1.NewLifecycleServiceClient(servicetest.DialAsService(t, b.svc.Addr(), "console"))

	start, changes := watch(t, console, nil)
	resp, err := b.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	id := resp.GetSession().GetId()
	var seen []*lifecyclev1.SessionChange
	for _, ev := range []string{"start", "pause"} {
		_, err := b.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(id), Event: ev})
		require.NoError(t, err, ev)
		// Live: well within the second the dashboard promises.
		c := nextChange(t, changes, time.Second)
		require.Equal(t, id, c.GetSessionId())
		require.Equal(t, []string{ev}, c.GetEvents())
		require.Greater(t, c.GetEventId(), start)
		seen = append(seen, c)
	}
	require.Equal(t, "waiting", seen[0].GetFrom())
	require.Equal(t, "running", seen[0].GetTo())
	require.Equal(t, "running", seen[1].GetFrom())
	require.Equal(t, "needs_input", seen[1].GetTo())

	// A watcher coming back with the first change's id gets exactly what
	// came after it; one from before everything gets it all, in order.
	after := seen[0].GetEventId()
	pos, again := watch(t, console, &after)
	require.Equal(t, after, pos)
	require.True(t, proto.Equal(seen[1], nextChange(t, again, 5*time.Second)))
	pos, all := watch(t, console, &start)
	require.Equal(t, start, pos)
	require.True(t, proto.Equal(seen[0], nextChange(t, all, 5*time.Second)))
	require.True(t, proto.Equal(seen[1], nextChange(t, all, 5*time.Second)))

	// A cursor past the newest change (another database's) starts now:
	// at the newest entry of the event streams (the pause's effects come
	// after its transition).
	future := int64(1 << 40)
	pos, _ = watch(t, console, &future)
	require.GreaterOrEqual(t, pos, seen[1].GetEventId())
	require.Less(t, pos, future)
}

// TestWatchSessionChangesMissesNothingUnderConcurrentTransitions: sessions
// transitioning at once commit their event-stream entries in some order;
// a watcher that reads while they do sees every transition exactly once,
// as does one that resumes from any position it was given.
func TestWatchSessionChangesMissesNothingUnderConcurrentTransitions(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	console := lifecyclev1.NewLifecycleServiceClient(servicetest.DialAsService(t, b.svc.Addr(), "console"))
	const sessions, rounds = 8, 6 // each round: start, pause, resume… alternating
	ids := make([]int64, sessions)
	for i := range ids {
		resp, err := b.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "g"})
		require.NoError(t, err)
		ids[i] = resp.GetSession().GetId()
	}
	start, changes := watch(t, console, nil)

	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				ev := map[bool]string{true: "start", false: "pause"}[r == 0]
				if r > 0 && r%2 == 0 {
					ev = "resume"
				}
				_, err := b.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(id), Event: ev})
				if err != nil {
					t.Errorf("session %d round %d %s: %v", id, r, ev, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())

	var want []int64
	rows, err := b.svc.Pool.Query(ctx, `SELECT id FROM session_events WHERE name = 'transition' AND id > $1 ORDER BY id`, start)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		want = append(want, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, want, sessions*rounds)

	var got []int64
	for range want {
		got = append(got, nextChange(t, changes, 5*time.Second).GetEventId())
	}
	require.Equal(t, want, got, "every transition once, in id order")
	select {
	case c := <-changes:
		t.Fatalf("a change too many: %v", c)
	case <-time.After(200 * time.Millisecond):
	}

	// Resumed from the middle: exactly the rest.
	mid := want[len(want)/2]
	_, rest := watch(t, console, &mid)
	for _, id := range want[len(want)/2+1:] {
		require.Equal(t, id, nextChange(t, rest, 5*time.Second).GetEventId())
	}
}

func TestWatchSessionChangesIsForZimmersServicesOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	for name, client := range map[string]lifecyclev1.LifecycleServiceClient{"operator key": b.operator, "admin key": b.client} {
		stream, err := client.WatchSessionChanges(context.Background(), &lifecyclev1.WatchSessionChangesRequest{})
		if err == nil {
			_, err = stream.Recv()
		}
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%s: %v", name, err)
	}
}
