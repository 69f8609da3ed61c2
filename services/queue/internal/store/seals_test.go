package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
	"github.com/zimmerhq/zimmer/services/queue/internal/store"
)

func TestSealRefusesEnqueueAndDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	a := enqueue(t, ms, 1, "a")
	keyed, _, err := ms.Enqueue(ctx, domain.NewMessage{SessionID: 1, Origin: domain.OriginCaller, Content: "k", IdempotencyKey: "k"})
	require.NoError(t, err)

	sealed, err := ms.Seal(ctx, 1, "archive-1")
	require.NoError(t, err)
	require.Equal(t, []int64{a.ID, keyed.ID}, ids(sealed))

	_, _, err = ms.Enqueue(ctx, domain.NewMessage{SessionID: 1, Origin: domain.OriginCaller, Content: "late"})
	require.ErrorIs(t, err, domain.ErrSealed)
	again, created, err := ms.Enqueue(ctx, domain.NewMessage{SessionID: 1, Origin: domain.OriginCaller, Content: "k", IdempotencyKey: "k"})
	require.NoError(t, err, "a retry of a message accepted before the seal still answers")
	require.False(t, created)
	require.Equal(t, keyed.ID, again.ID)

	_, ok, err := ms.Claim(ctx, 1, domain.Pick{})
	require.NoError(t, err)
	require.False(t, ok, "a sealed queue delivers nothing")

	_, err = ms.Seal(ctx, 1, "archive-2")
	require.ErrorIs(t, err, domain.ErrArchiveInProgress)
	resealed, err := ms.Seal(ctx, 1, "archive-1")
	require.NoError(t, err)
	require.Equal(t, ids(sealed), ids(resealed))

	require.NoError(t, ms.Unseal(ctx, 1, "archive-2"), "another attempt's unseal is a no-op")
	_, _, err = ms.Enqueue(ctx, domain.NewMessage{SessionID: 1, Origin: domain.OriginCaller, Content: "late"})
	require.ErrorIs(t, err, domain.ErrSealed)

	require.NoError(t, ms.Unseal(ctx, 1, "archive-1"))
	enqueue(t, ms, 1, "after the archive gave up")
	require.Equal(t, []string{"a", "k", "after the archive gave up"}, live(t, ms, 1))
}

func TestRetireReturnsExactlyTheLiveMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	sent := enqueue(t, ms, 1, "sent")
	claim, _, err := ms.Claim(ctx, 1, domain.Pick{})
	require.NoError(t, err)
	require.Equal(t, sent.ID, claim.Message.ID)
	_, err = ms.MarkSent(ctx, claim, "", "")
	require.NoError(t, err)
	b, c := enqueue(t, ms, 1, "b"), enqueue(t, ms, 1, "c")
	_, err = ms.Update(ctx, 1, c.ID, domain.Edit{}, 1)
	require.NoError(t, err)
	other := enqueue(t, ms, 2, "another session's")

	archivedAt := time.Now()
	retired, err := ms.Retire(ctx, 1, archivedAt, "")
	require.NoError(t, err)
	require.Equal(t, []int64{c.ID, b.ID}, ids(retired), "in queue order")
	for _, m := range retired {
		require.Equal(t, domain.StatusUndelivered, m.Status)
		require.Equal(t, domain.ReasonArchived, m.UndeliveredReason)
	}
	again, err := ms.Retire(ctx, 1, archivedAt, "")
	require.NoError(t, err)
	require.Empty(t, again, "a redelivered event retires nothing more")

	_, _, err = ms.Enqueue(ctx, domain.NewMessage{SessionID: 1, Origin: domain.OriginCaller, Content: "late"})
	require.ErrorIs(t, err, domain.ErrSealed, "retiring seals")
	require.Equal(t, []string{"another session's"}, live(t, ms, 2))
	all, err := ms.List(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, other, all[0])

	require.NoError(t, ms.Unseal(ctx, 1, store.RetiredSeal), "only an unarchive lifts a retirement's seal")
	_, _, err = ms.Enqueue(ctx, domain.NewMessage{SessionID: 1, Origin: domain.OriginCaller, Content: "late"})
	require.ErrorIs(t, err, domain.ErrSealed)
	require.NoError(t, ms.Reopen(ctx, 1, archivedAt.Add(time.Minute)), "unarchive")
	require.Empty(t, live(t, ms, 1), "unarchive never revives undelivered messages")
	enqueue(t, ms, 1, "after the unarchive")
}

func TestARetirementArrivingAfterItsUnarchiveRetiresNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	archivedAt := time.Now()
	enqueue(t, ms, 1, "still wanted")
	require.NoError(t, ms.Reopen(ctx, 1, archivedAt.Add(time.Second)))
	retired, err := ms.Retire(ctx, 1, archivedAt, "")
	require.NoError(t, err)
	require.Empty(t, retired, "the archive was undone before its effect arrived")
	require.Equal(t, []string{"still wanted"}, live(t, ms, 1))
	enqueue(t, ms, 1, "and the queue is open")

	retired, err = ms.Retire(ctx, 1, archivedAt.Add(time.Hour), "")
	require.NoError(t, err)
	require.Len(t, retired, 2, "a later archive retires as usual")
}

// The rare variant: the archive's retirement fails once, and the unarchive's
// reopening arrives first. The archive attempt's seal is not the
// retirement's, so the reopening leaves it; the retirement, arriving late,
// carries the attempt and lifts that seal, rather than leaving the restored
// session's queue sealed until the stale-seal sweep. Another attempt's seal
// (a newer archive's) it leaves alone.
func TestALateRetirementLiftsItsOwnAttemptsSealAfterTheUnarchive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	enqueue(t, ms, 1, "forced past the guard")
	_, err := ms.Seal(ctx, 1, "archive-1")
	require.NoError(t, err)
	archivedAt := time.Now() // the archive commits; its retirement fails once
	require.NoError(t, ms.Reopen(ctx, 1, archivedAt.Add(time.Second)), "the unarchive's reopening arrives first")
	_, _, err = ms.Enqueue(ctx, domain.NewMessage{SessionID: 1, Origin: domain.OriginCaller, Content: "too soon"})
	require.ErrorIs(t, err, domain.ErrSealed, "the reopening lifts only a retirement's seal")

	retired, err := ms.Retire(ctx, 1, archivedAt, "archive-1")
	require.NoError(t, err)
	require.Empty(t, retired, "the archive was undone before its retirement arrived")
	enqueue(t, ms, 1, "the restored session's queue is open")
	require.Equal(t, []string{"forced past the guard", "the restored session's queue is open"}, live(t, ms, 1))

	// A newer archive's attempt holds the seal now: a stale retirement
	// (redelivered) of the first archive neither lifts nor takes it.
	_, err = ms.Seal(ctx, 1, "archive-2")
	require.NoError(t, err)
	retired, err = ms.Retire(ctx, 1, archivedAt, "archive-1")
	require.NoError(t, err)
	require.Empty(t, retired)
	_, _, err = ms.Enqueue(ctx, domain.NewMessage{SessionID: 1, Origin: domain.OriginCaller, Content: "during archive-2"})
	require.ErrorIs(t, err, domain.ErrSealed, "archive-2's seal holds")
	require.NoError(t, ms.Unseal(ctx, 1, "archive-2"), "archive-2 did not commit")
	enqueue(t, ms, 1, "open again")
}

// The stale-seal sweep lifted an undone archive's seal, a newer archive
// sealed, and the old archive's retirement arrives before its unarchive's
// reopening: it neither takes the newer attempt's seal nor retires what the
// restored session was sent since.
func TestAStaleRetirementNeverTakesANewerAttemptsSeal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	_, err := ms.Seal(ctx, 1, "archive-1")
	require.NoError(t, err)
	archivedAt := time.Now()
	require.NoError(t, ms.Unseal(ctx, 1, "archive-1"), "the sweep: the session is not archived any more")
	enqueue(t, ms, 1, "sent to the restored session")
	_, err = ms.Seal(ctx, 1, "archive-2")
	require.NoError(t, err)

	retired, err := ms.Retire(ctx, 1, archivedAt, "archive-1")
	require.NoError(t, err)
	require.Empty(t, retired, "archive-1 was undone before archive-2 sealed")
	require.Equal(t, []string{"sent to the restored session"}, live(t, ms, 1))
	require.NoError(t, ms.Unseal(ctx, 1, "archive-2"), "archive-2 did not commit: its seal is still its own")
	enqueue(t, ms, 1, "open again")
}

func ids(ms []domain.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// A deleted session's live messages end undelivered saying so, in queue
// order; sent ones stay sent, and another session's queue is untouched.
func TestAbandonEndsADeletedSessionsMessagesUndelivered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	a, b := enqueue(t, ms, 1, "a"), enqueue(t, ms, 1, "b")
	_, err := ms.Update(ctx, 1, b.ID, domain.Edit{}, 1)
	require.NoError(t, err)
	enqueue(t, ms, 2, "another session's")

	gone, err := ms.Abandon(ctx, 1, domain.ReasonSessionGone)
	require.NoError(t, err)
	require.Equal(t, []int64{b.ID, a.ID}, ids(gone), "in queue order")
	for _, m := range gone {
		require.Equal(t, domain.StatusUndelivered, m.Status)
		require.Equal(t, domain.ReasonSessionGone, m.UndeliveredReason)
		require.False(t, m.UndeliveredAt.IsZero())
	}
	again, err := ms.Abandon(ctx, 1, domain.ReasonSessionGone)
	require.NoError(t, err)
	require.Empty(t, again, "idempotent")
	require.Equal(t, []string{"another session's"}, live(t, ms, 2))
}
