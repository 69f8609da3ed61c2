package store_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

func sendAs(job string) domain.Send {
	return func(context.Context, domain.Message) (string, bool, error) { return job, true, nil }
}

func TestDeliverMarksTheFirstPendingMessageSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	a, b := enqueue(t, ms, 1, "a"), enqueue(t, ms, 1, "b")

	m, ok, err := ms.Deliver(ctx, 1, domain.Pick{HandedOverFrom: "turn-1"}, sendAs("job-a"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, a.ID, m.ID)
	require.Equal(t, domain.StatusSent, m.Status)
	require.Equal(t, "job-a", m.DeliveredJobID)
	require.Equal(t, []string{"b"}, live(t, ms, 1))
	all, err := ms.List(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, 1, all[0].Position, "the rest moves up")
	require.Equal(t, b.ID, all[0].ID)

	again, found, err := ms.HandedOver(ctx, 1, "turn-1")
	require.NoError(t, err)
	require.True(t, found, "a retried drain finds what it handed over")
	require.Equal(t, a.ID, again.ID)
	_, found, err = ms.HandedOver(ctx, 1, "turn-2")
	require.NoError(t, err)
	require.False(t, found)
}

func TestADeliveryThatFailsOrIsRefusedLeavesTheMessagePending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	a := enqueue(t, ms, 1, "a")
	boom := errors.New("lifecycle unreachable")

	_, ok, err := ms.Deliver(ctx, 1, domain.Pick{}, func(context.Context, domain.Message) (string, bool, error) { return "", false, boom })
	require.ErrorIs(t, err, boom)
	require.False(t, ok)
	_, ok, err = ms.Deliver(ctx, 1, domain.Pick{}, func(context.Context, domain.Message) (string, bool, error) { return "", false, nil })
	require.NoError(t, err)
	require.False(t, ok)

	all, err := ms.List(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, domain.StatusPending, all[0].Status)
	require.Equal(t, a.ID, all[0].ID)
	require.True(t, all[0].ClaimedAt.IsZero(), "the claim rolled back with the transaction")
}

func TestDeliverANamedMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	enqueue(t, ms, 1, "a")
	b := enqueue(t, ms, 1, "b")
	other := enqueue(t, ms, 2, "another session's")

	m, ok, err := ms.Deliver(ctx, 1, domain.Pick{MessageID: b.ID}, sendAs("job-b"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, b.ID, m.ID)
	require.Equal(t, []string{"a"}, live(t, ms, 1))

	_, _, err = ms.Deliver(ctx, 1, domain.Pick{MessageID: b.ID}, sendAs("again"))
	require.ErrorIs(t, err, domain.ErrNotPending)
	_, _, err = ms.Deliver(ctx, 1, domain.Pick{MessageID: other.ID}, sendAs("x"))
	require.ErrorIs(t, err, domain.ErrNotFound, "another session's message is not this queue's")
	_, _, err = ms.Deliver(ctx, 1, domain.Pick{MessageID: math.MaxInt64}, sendAs("x"))
	require.ErrorIs(t, err, domain.ErrNotFound, "the largest id is an id like any other")
	_, err = ms.Seal(ctx, 1, "archive")
	require.NoError(t, err)
	_, _, err = ms.Deliver(ctx, 1, domain.Pick{MessageID: b.ID + 100}, sendAs("x"))
	require.ErrorIs(t, err, domain.ErrSealed)
	_, ok, err = ms.Deliver(ctx, 1, domain.Pick{}, sendAs("x"))
	require.NoError(t, err)
	require.False(t, ok, "a sealed queue delivers nothing")
}

// Many deliverers at once over one queue: every message is sent exactly
// once, in queue order (one session's deliveries follow each other: the
// order the sends happen in, under the claim, is the delivery order).
func TestConcurrentDeliverersSendEachMessageOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	const n = 30
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("m%02d", i)
		enqueue(t, ms, 1, want[i])
	}
	var (
		mu    sync.Mutex
		sends []string
		sent  []string
		wg    sync.WaitGroup
	)
	for range 6 {
		wg.Go(func() {
			for {
				m, ok, err := ms.Deliver(ctx, 1, domain.Pick{}, func(_ context.Context, m domain.Message) (string, bool, error) {
					mu.Lock()
					sends = append(sends, m.Content)
					mu.Unlock()
					return "job-" + m.Content, true, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				sent = append(sent, m.Content)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, want, sends, "each sent once, in queue order")
	require.ElementsMatch(t, want, sent, "and each marked sent")
	require.Empty(t, live(t, ms, 1))
}

func TestInterruptLockSerialisesOneSessionOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	var (
		mu      sync.Mutex
		inside  int
		maxSeen int
		wg      sync.WaitGroup
	)
	for range 3 {
		wg.Go(func() {
			require.NoError(t, ms.LockForInterrupt(ctx, 1, func(context.Context) error {
				mu.Lock()
				inside++
				maxSeen = max(maxSeen, inside)
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				return nil
			}))
		})
	}
	held := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_ = ms.LockForInterrupt(ctx, 3, func(context.Context) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	otherDone := make(chan struct{})
	go func() {
		require.NoError(t, ms.LockForInterrupt(ctx, 4, func(context.Context) error { return nil }))
		close(otherDone)
	}()
	select {
	case <-otherDone:
	case <-time.After(5 * time.Second):
		t.Fatal("another session's interrupt waited on session 3's")
	}
	close(release)
	wg.Wait()
	require.Equal(t, 1, maxSeen)
}

// A send that finds its message can never be a turn ends it undelivered
// with the reason, committed, and answers the *UndeliverableError; the
// messages behind it move up.
func TestDeliverMarksAnUndeliverableMessageUndelivered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	blank, next := enqueue(t, ms, 1, "first"), enqueue(t, ms, 1, "next")
	never := &domain.UndeliverableError{MessageID: blank.ID, Reason: domain.ReasonBlank}
	_, ok, err := ms.Deliver(ctx, 1, domain.Pick{}, func(context.Context, domain.Message) (string, bool, error) { return "", false, never })
	require.False(t, ok)
	require.ErrorIs(t, err, never)
	got, err := ms.Message(ctx, 1, blank.ID)
	require.NoError(t, err)
	require.Equal(t, domain.StatusUndelivered, got.Status)
	require.Equal(t, domain.ReasonBlank, got.UndeliveredReason)
	require.Equal(t, []string{"next"}, live(t, ms, 1))
	n, err := ms.Message(ctx, 1, next.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n.Position, "the message behind moved up")
}
