package drain_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
	"github.com/zimmerhq/zimmer/services/queue/internal/drain"
	"github.com/zimmerhq/zimmer/services/queue/internal/store"
)

// recordingPoker records the sessions whose drain was poked; fail makes
// the poke of a session fail.
type recordingPoker struct {
	mu    sync.Mutex
	poked []int64
	fail  map[int64]bool
}

func (p *recordingPoker) Poke(_ context.Context, id int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail[id] {
		return errors.New("temporal unavailable")
	}
	p.poked = append(p.poked, id)
	return nil
}

// A claim whose holder died (it never settles) is put back in line once
// its lease is over, and its session's drain is poked first (QU-20); a
// live claim, a pending message and a settled one are left alone; a
// session whose drain cannot be poked keeps its claim for a later run.
func TestTheSweepDrainsTheClaimsTheirHoldersLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.DB(t, store.Migrations)
	const lease = 300 * time.Millisecond
	ms := store.NewMessages(pool, clock.System{}).WithLeases(store.Leases{Claim: lease, Interrupt: lease})
	longLease := store.NewMessages(pool, clock.System{}).WithLeases(store.Leases{Claim: time.Hour, Interrupt: time.Hour})
	enqueue := func(session int64, content string) {
		t.Helper()
		_, _, err := ms.Enqueue(ctx, domain.NewMessage{SessionID: session, Origin: domain.OriginCaller, Content: content})
		require.NoError(t, err)
	}
	claim := func(m *store.Messages, session int64) {
		t.Helper()
		_, ok, err := m.Claim(ctx, session, domain.Pick{})
		require.NoError(t, err)
		require.True(t, ok)
	}
	for _, s := range []int64{1, 2, 3, 4, 5} {
		enqueue(s, "hello")
	}
	claim(ms, 1)        // its holder dies
	claim(ms, 5)        // its holder dies; its drain cannot be poked
	claim(longLease, 2) // its holder is alive
	// 3 stays pending; 4 is delivered.
	_, ok, err := ms.Deliver(ctx, 4, domain.Pick{}, func(context.Context, domain.Message) (string, bool, error) { return "job-4", true, nil })
	require.NoError(t, err)
	require.True(t, ok)
	time.Sleep(lease + 200*time.Millisecond)

	drains := &recordingPoker{fail: map[int64]bool{5: true}}
	sweep := &drain.ClaimSweep{Claims: ms, Drains: drains, Logger: slogx.Discard()}
	n, err := sweep.ReleaseExpired(ctx, time.Now())
	require.ErrorContains(t, err, "temporal unavailable")
	require.EqualValues(t, 1, n)
	require.Equal(t, []int64{1}, drains.poked)
	status := func(session int64) domain.Status {
		t.Helper()
		got, err := ms.List(ctx, session)
		require.NoError(t, err)
		require.Len(t, got, 1)
		return got[0].Status
	}
	require.Equal(t, domain.StatusPending, status(1), "back in line for the drain")
	require.Equal(t, domain.StatusProcessing, status(2), "a live claim is its holder's")
	require.Equal(t, domain.StatusPending, status(3))
	require.Equal(t, domain.StatusSent, status(4))
	require.Equal(t, domain.StatusProcessing, status(5), "kept until its drain can be poked")

	drains.fail = nil
	n, err = sweep.ReleaseExpired(ctx, time.Now())
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, []int64{1, 5}, drains.poked, "each once")
	require.Equal(t, domain.StatusPending, status(5))
}
