package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/queue/internal/store"
)

// Only archive attempts' seals placed before the cutoff are stale: not a
// fresh one, not an unsealed queue, not retirement's.
func TestStaleSealsListsOnlyOldAttemptSeals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.DB(t, store.Migrations)
	sealedAt := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewStub(sealedAt)
	ms := store.NewMessages(pool, clk)

	_, err := ms.Seal(ctx, 1, "attempt-old")
	require.NoError(t, err)
	_, err = ms.Seal(ctx, 2, "attempt-retired")
	require.NoError(t, err)
	_, err = ms.Retire(ctx, 2, sealedAt, "attempt-retired") // the archive committed: retirement takes the seal over
	require.NoError(t, err)
	_, err = ms.Seal(ctx, 3, "attempt-given-up")
	require.NoError(t, err)
	require.NoError(t, ms.Unseal(ctx, 3, "attempt-given-up"))
	clk.Advance(90 * time.Second)
	_, err = ms.Seal(ctx, 4, "attempt-fresh")
	require.NoError(t, err)

	got, err := ms.StaleSeals(ctx, clk.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.Equal(t, map[int64]string{1: "attempt-old"}, got)

	got, err = ms.StaleSeals(ctx, clk.Now().Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, map[int64]string{1: "attempt-old", 4: "attempt-fresh"}, got, "the cutoff decides, not the clock")
}
