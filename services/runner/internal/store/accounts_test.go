package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
)

// TestAccountsChooseTheLeastUsedAndRestAfterAWall: the pool's state in
// Postgres, as every node reads it — turns recorded under the least used
// account (concurrent choices counting each other's), a turn asked again
// answering its account, a wall resting an account (a later one
// standing), targets filling, parks listed by account.
func TestAccountsChooseTheLeastUsedAndRestAfterAWall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := store.NewAccounts(pgtest.DB(t, store.Migrations))
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	pool := []domain.Account{{Runtime: "demo", Name: "a"}, {Runtime: "demo", Name: "b"}}

	// Ten first turns at once spread evenly: each choice sees the others.
	var wg sync.WaitGroup
	chosen := make([]domain.Choice, 10)
	errs := make([]error, 10)
	for i := range chosen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chosen[i], errs[i] = s.Choose(ctx, store.ChooseRequest{Runtime: "demo", SessionID: int64(i + 1), TurnID: fmt.Sprintf("t-%d", i), Accounts: pool, Now: now})
		}()
	}
	wg.Wait()
	counts := map[string]int{}
	for i, c := range chosen {
		require.NoError(t, errs[i])
		require.True(t, c.Run)
		counts[c.Account]++
	}
	require.Equal(t, map[string]int{"a": 5, "b": 5}, counts)

	again, err := s.Choose(ctx, store.ChooseRequest{Runtime: "demo", SessionID: 1, TurnID: "t-0", Accounts: pool, Now: now.Add(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, chosen[0].Account, again.Account, "a turn asked again keeps its account")
	had, err := s.TurnAccount(ctx, "t-0")
	require.NoError(t, err)
	require.Equal(t, chosen[0].Account, had, "the turn record names its account")

	// A wall rests "a"; an earlier rest recorded after it does not shorten it.
	reset := now.Add(time.Hour)
	require.NoError(t, s.RecordWall(ctx, "demo", "a", reset, "usage limit", now))
	require.NoError(t, s.RecordWall(ctx, "demo", "a", now.Add(time.Minute), "again", now))
	use, err := s.Use(ctx, pool, now)
	require.NoError(t, err)
	require.True(t, reset.Equal(use[0].RestsUntil))
	require.False(t, use[0].HasCapacity(now))
	c, err := s.Choose(ctx, store.ChooseRequest{Runtime: "demo", SessionID: 20, TurnID: "t-20", Sticky: "a", Accounts: pool, Now: now})
	require.NoError(t, err)
	require.False(t, c.Run, "a session waits for its own account")
	require.True(t, reset.Equal(c.Until))
	c, err = s.Choose(ctx, store.ChooseRequest{Runtime: "demo", SessionID: 21, TurnID: "t-21", Accounts: pool, Now: now})
	require.NoError(t, err)
	require.Equal(t, domain.Choice{Run: true, Account: "b"}, c, "a new one goes to the account with capacity")

	// A target of 6 turns per hour fills "b"; it frees when the oldest of
	// its six leaves the window.
	targeted := []domain.Account{{Runtime: "demo", Name: "b", Targets: []domain.QuotaTarget{{Window: time.Hour, MaxTurns: 6}}}}
	use, err = s.Use(ctx, targeted, now.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, 6, use[0].Targets[0].Turns)
	require.True(t, now.Add(time.Hour).Equal(use[0].Targets[0].FreesAt))

	// Old turn records are pruned; newer ones stay.
	pruned, err := s.PruneTurns(ctx, now.Add(time.Second), 1000)
	require.NoError(t, err)
	require.Equal(t, int64(11), pruned)
	had, err = s.TurnAccount(ctx, "t-0")
	require.NoError(t, err)
	require.Empty(t, had)

	// Parks, by account.
	require.NoError(t, s.Park(ctx, domain.PoolPark{SessionID: 1, Runtime: "demo", Account: "a", Reason: "r", Until: reset, ParkedAt: now}))
	require.NoError(t, s.Park(ctx, domain.PoolPark{SessionID: 2, Runtime: "demo", Account: "a", Reason: "r", Until: reset, ParkedAt: now.Add(time.Second)}))
	parks, err := s.ParkedOn(ctx, "demo", "a")
	require.NoError(t, err)
	require.Len(t, parks, 2)
	require.Equal(t, int64(1), parks[0].SessionID)
	require.NoError(t, s.Unpark(ctx, 1))
	n, err := s.ParkedCounts(ctx)
	require.NoError(t, err)
	require.Equal(t, map[[2]string]int{{"demo", "a"}: 1}, n)
}
