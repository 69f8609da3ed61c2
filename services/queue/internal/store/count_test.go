package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCountPendingCountsOnlyPendingMessagesPerSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	enqueue(t, ms, 1, "one")
	enqueue(t, ms, 1, "two")
	enqueue(t, ms, 2, "three")
	// Session 3's message was retired by an archive (undelivered), and
	// session 4's deleted: neither waits any more.
	enqueue(t, ms, 3, "retired")
	_, err := ms.Retire(ctx, 3, t0, "")
	require.NoError(t, err)
	deleted := enqueue(t, ms, 4, "deleted")
	require.NoError(t, ms.Delete(ctx, 4, deleted.ID))

	got, err := ms.CountPending(ctx, []int64{1, 2, 3, 4, 5})
	require.NoError(t, err)
	require.Equal(t, map[int64]int32{1: 2, 2: 1}, got, "a session with nothing pending is left out")
}
