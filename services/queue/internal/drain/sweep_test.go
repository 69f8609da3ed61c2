package drain_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/queue/internal/drain"
	"github.com/zimmerhq/zimmer/services/queue/internal/store"
)

// fakeSessions answers statuses by session; a session it does not know is
// not found, and errs fails the read.
type fakeSessions struct {
	statuses map[int64]string
	errs     map[int64]error
	mu       sync.Mutex
	asked    []int64
}

func (f *fakeSessions) Status(_ context.Context, id int64) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, id)
	if err, ok := f.errs[id]; ok {
		return "", err
	}
	s, ok := f.statuses[id]
	if !ok {
		return "", fmt.Errorf("session %d: %w", id, drain.ErrSessionNotFound)
	}
	return s, nil
}

func sealedBy(t *testing.T, pool *pgxpool.Pool, sessionID int64) string {
	t.Helper()
	var by *string
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT sealed_by FROM session_queues WHERE session_id = $1`, sessionID).Scan(&by))
	if by == nil {
		return ""
	}
	return *by
}

// The sweep lifts the stale seals of sessions that are not archived (or no
// longer exist), leaves an archived session's seal to its retire effect,
// never touches a fresh seal or retirement's, and keeps a seal whose
// session it cannot read for a later run, saying so.
func TestSweepUnsealsStaleSealsOfSessionsNotArchived(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.DB(t, store.Migrations)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewStub(t0)
	ms := store.NewMessages(pool, clk)
	for id, by := range map[int64]string{1: "attempt-1", 2: "attempt-2", 4: "attempt-4", 5: "attempt-5", 6: "attempt-6"} {
		_, err := ms.Seal(ctx, id, by)
		require.NoError(t, err)
	}
	_, err := ms.Retire(ctx, 4, t0, "")
	require.NoError(t, err)
	clk.Advance(2 * time.Minute)
	_, err = ms.Seal(ctx, 3, "attempt-3") // 30s before the run: fresh
	require.NoError(t, err)
	cutoff := clk.Advance(30 * time.Second).Add(-drain.StaleSealAge)
	lifecycleDown := errors.New("lifecycle unavailable")
	sessions := &fakeSessions{
		statuses: map[int64]string{1: rules.StatusWaiting, 2: rules.StatusArchived, 3: rules.StatusWaiting, 4: rules.StatusWaiting},
		errs:     map[int64]error{6: lifecycleDown},
	}
	sweep := &drain.Sweep{Seals: ms, Sessions: sessions, Logger: slogx.Discard()}

	unsealed, err := sweep.UnsealStale(ctx, cutoff)
	require.ErrorIs(t, err, lifecycleDown)
	require.ErrorContains(t, err, "session 6")
	require.EqualValues(t, 2, unsealed)
	require.Equal(t, []int64{1, 2, 5, 6}, sessions.asked, "only stale attempts' seals are looked into")
	for id, want := range map[int64]string{
		1: "", 2: "attempt-2", 3: "attempt-3", 4: store.RetiredSeal, 5: "", 6: "attempt-6",
	} {
		require.Equal(t, want, sealedBy(t, pool, id), "session %d", id)
	}

	sessions.errs = nil
	sessions.statuses[6] = rules.StatusNeedsInput
	unsealed, err = sweep.UnsealStale(ctx, cutoff)
	require.NoError(t, err)
	require.EqualValues(t, 1, unsealed, "the next run lifts what the last could not")
	require.Empty(t, sealedBy(t, pool, 6))
}

func TestSweepRunsEveryMinuteUnderItsOwnSchedule(t *testing.T) {
	t.Parallel()
	p := (&drain.Sweep{}).Periodic()
	require.Equal(t, "queue-stale-seals", periodic.ScheduleID("queue", p.Name))
	require.Equal(t, time.Minute, p.Window)
}
