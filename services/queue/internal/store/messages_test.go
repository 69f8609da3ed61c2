package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
	"github.com/zimmerhq/zimmer/services/queue/internal/store"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func newMessages(t *testing.T) (*store.Messages, pgdb.TxBeginner) {
	t.Helper()
	pool := pgtest.DB(t, store.Migrations)
	return store.NewMessages(pool, clock.NewStub(t0)), pool
}

func enqueue(t *testing.T, ms *store.Messages, sessionID int64, content string) domain.Message {
	t.Helper()
	m, created, err := ms.Enqueue(context.Background(), domain.NewMessage{SessionID: sessionID, Origin: domain.OriginCaller, Content: content})
	require.NoError(t, err)
	require.True(t, created)
	return m
}

// live is the session's live queue as content in delivery order, after
// checking that its positions are exactly 1..n.
func live(t *testing.T, ms *store.Messages, sessionID int64) []string {
	t.Helper()
	all, err := ms.List(context.Background(), sessionID)
	require.NoError(t, err)
	var out []string
	for _, m := range all {
		if m.Live() {
			require.Equal(t, len(out)+1, m.Position, "positions are gap-free: %+v", all)
			out = append(out, m.Content)
		}
	}
	return out
}

func TestEnqueueAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	m, created, err := ms.Enqueue(ctx, domain.NewMessage{SessionID: 1, Origin: domain.OriginAutomatedPRMerged,
		ActingSessionID: 7, Content: "merged", Goal: "archive"})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, domain.Message{ID: m.ID, SessionID: 1, Position: 1, Status: domain.StatusPending,
		Origin: domain.OriginAutomatedPRMerged, ActingSessionID: 7, Content: "merged", Goal: "archive",
		CreatedAt: t0, UpdatedAt: t0}, m)
	enqueue(t, ms, 1, "second")
	enqueue(t, ms, 2, "another session")
	require.Equal(t, []string{"merged", "second"}, live(t, ms, 1))

	_, _, err = ms.Enqueue(ctx, domain.NewMessage{SessionID: 1, Origin: domain.OriginCaller, Content: "a\x00"})
	var verr *validation.Error
	require.ErrorAs(t, err, &verr)
}

func TestIdempotentEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	n := domain.NewMessage{SessionID: 1, Origin: domain.OriginCaller, Content: "once", IdempotencyKey: "k1"}
	first, created, err := ms.Enqueue(ctx, n)
	require.NoError(t, err)
	require.True(t, created)

	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			retry := n
			retry.Content = "a retry's body is ignored"
			got, created, err := ms.Enqueue(ctx, retry)
			require.NoError(t, err)
			require.False(t, created)
			require.Equal(t, first, got)
		})
	}
	wg.Wait()
	require.Equal(t, []string{"once"}, live(t, ms, 1))

	other := n
	other.SessionID = 2
	_, created, err = ms.Enqueue(ctx, other)
	require.NoError(t, err)
	require.True(t, created, "keys are per session")
}

func TestConcurrentEnqueuesKeepAGapFreeOrder(t *testing.T) {
	t.Parallel()
	ms, _ := newMessages(t)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { enqueue(t, ms, 1, fmt.Sprint(i)) })
	}
	wg.Wait()
	require.Len(t, live(t, ms, 1), 100)
}

func TestUpdateAndDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	a, b, c := enqueue(t, ms, 1, "a"), enqueue(t, ms, 1, "b"), enqueue(t, ms, 1, "c")

	text, goal := "C", "new goal"
	m, err := ms.Update(ctx, 1, c.ID, domain.Edit{Content: &text, Goal: &goal}, 1)
	require.NoError(t, err)
	require.Equal(t, "C", m.Content)
	require.Equal(t, "new goal", m.Goal)
	require.Equal(t, 1, m.Position)
	require.Equal(t, []string{"C", "a", "b"}, live(t, ms, 1))

	_, err = ms.Update(ctx, 1, a.ID, domain.Edit{}, 3)
	require.NoError(t, err)
	require.Equal(t, []string{"C", "b", "a"}, live(t, ms, 1))

	_, err = ms.Update(ctx, 1, a.ID, domain.Edit{}, 4)
	require.Error(t, err, "past the end")
	_, err = ms.Update(ctx, 2, a.ID, domain.Edit{}, 1)
	require.ErrorIs(t, err, domain.ErrNotFound, "another session's message")

	require.NoError(t, ms.Delete(ctx, 1, b.ID))
	require.Equal(t, []string{"C", "a"}, live(t, ms, 1))
	require.ErrorIs(t, ms.Delete(ctx, 1, b.ID), domain.ErrNotFound)
}

func TestClaimDeliverAndRollBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	enqueue(t, ms, 1, "a")
	enqueue(t, ms, 1, "b")

	c, ok, err := ms.Claim(ctx, 1, domain.Pick{})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "a", c.Message.Content)
	require.NoError(t, ms.Release(ctx, c))
	require.Equal(t, []string{"a", "b"}, live(t, ms, 1), "a failed delivery leaves the message pending")

	c, ok, err = ms.Claim(ctx, 1, domain.Pick{})
	require.NoError(t, err)
	require.True(t, ok)
	_, err = ms.MarkSent(ctx, c, "", "")
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, live(t, ms, 1), "the rest move up")
	all, err := ms.List(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, domain.StatusSent, all[1].Status)
	require.Equal(t, t0, all[1].SentAt)
}

// One session's deliveries follow each other: while one claim is open, a
// second deliverer waits for it (the claim's lease holds the session's
// deliveries), and then takes the next message, never the same one.
func TestConcurrentClaimsNeverTakeTheSameMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, _ := newMessages(t)
	first, second := enqueue(t, ms, 1, "a"), enqueue(t, ms, 1, "b")

	claimed := make(chan int64, 2)
	release := make(chan struct{})
	claim := func(hold bool) {
		c, ok, err := ms.Claim(ctx, 1, domain.Pick{})
		require.NoError(t, err)
		require.True(t, ok)
		claimed <- c.Message.ID
		if hold {
			<-release
		}
		_, err = ms.MarkSent(ctx, c, "", "")
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { claim(true) })
	require.Equal(t, first.ID, <-claimed)
	wg.Go(func() { claim(false) })
	select {
	case id := <-claimed:
		t.Fatalf("a second claim (message %d) went ahead while the first was open", id)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	require.Equal(t, second.ID, <-claimed, "then the next message, not the same one")
	wg.Wait()
	require.Empty(t, live(t, ms, 1))
}
