package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/app/apptest"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
)

// forEachSlackRepository runs test against the in-memory fake and
// Postgres, so the app's tests hold for the store.
func forEachSlackRepository(t *testing.T, test func(t *testing.T, repo app.SlackRepository)) {
	t.Helper()
	t.Run("fake", func(t *testing.T) {
		t.Parallel()
		test(t, apptest.NewSlack())
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, store.NewSlack(pgtest.DB(t, inbox.Migrations, store.Migrations)))
	})
}

// Of many concurrent deliveries of one event, exactly one is accepted; the
// stored payload and the steps read back as written.
func TestAnEventIsAcceptedOnce(t *testing.T) {
	t.Parallel()
	forEachSlackRepository(t, func(t *testing.T, repo app.SlackRepository) {
		ctx := context.Background()
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		payload := []byte(`{"type":"event_callback","event_id":"Ev1"}`)
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			accepted int
		)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := repo.AcceptEvent(ctx, domain.SlackEvent{EventID: "Ev1", Payload: payload, ReceivedAt: at})
				require.NoError(t, err)
				if ok {
					mu.Lock()
					accepted++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Equal(t, 1, accepted)

		require.NoError(t, repo.SetEventSession(ctx, "Ev1", 42))
		require.NoError(t, repo.MarkEventStep(ctx, "Ev1", app.StepCaptured, at))
		e, err := repo.Event(ctx, "Ev1")
		require.NoError(t, err)
		require.Equal(t, domain.SlackEvent{EventID: "Ev1", Payload: payload, ReceivedAt: at, SessionID: 42, Captured: true}, e)
		require.NoError(t, repo.FinishEvent(ctx, "Ev1", "started session 42", at))
		e, err = repo.Event(ctx, "Ev1")
		require.NoError(t, err)
		require.True(t, e.Processed)
		require.Equal(t, "started session 42", e.Outcome)
	})
}

// The follow-up's mark keeps the queue's answer, and the first mark stands
// (a retry that asked again cannot change what the thread is told).
func TestAFollowUpKeepsItsFirstAnswer(t *testing.T) {
	t.Parallel()
	forEachSlackRepository(t, func(t *testing.T, repo app.SlackRepository) {
		ctx := context.Background()
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		_, err := repo.AcceptEvent(ctx, domain.SlackEvent{EventID: "Ev2", Payload: []byte(`{}`), ReceivedAt: at})
		require.NoError(t, err)
		e, err := repo.Event(ctx, "Ev2")
		require.NoError(t, err)
		require.False(t, e.FollowedUp)
		require.Empty(t, e.FollowUpAnswer)

		require.NoError(t, repo.MarkFollowedUp(ctx, "Ev2", "Message queued (session is running).", at))
		require.NoError(t, repo.MarkFollowedUp(ctx, "Ev2", "Follow-up delivered.", at.Add(time.Second)))
		e, err = repo.Event(ctx, "Ev2")
		require.NoError(t, err)
		require.True(t, e.FollowedUp)
		require.Equal(t, "Message queued (session is running).", e.FollowUpAnswer)
	})
}

// A thread is one session's and a session has one thread; deleting the
// trigger keeps the binding without its trigger.
func TestThreadsBindOnceAndOutliveTheirTrigger(t *testing.T) {
	t.Parallel()
	forEachSlackRepository(t, func(t *testing.T, repo app.SlackRepository) {
		ctx := context.Background()
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		tr, err := repo.CreateTrigger(ctx, domain.SlackTrigger{Channel: "C1", AllowedUserIDs: []string{"U1"}, GitRoot: "/r", CreatedAt: at})
		require.NoError(t, err)
		require.NotZero(t, tr.ID)
		list, err := repo.ListTriggers(ctx)
		require.NoError(t, err)
		require.Equal(t, []domain.SlackTrigger{tr}, list)

		th := domain.SlackThread{ChannelID: "C1", ThreadTS: "1.2", SessionID: 7, TriggerID: tr.ID}
		require.NoError(t, repo.BindThread(ctx, th, at))
		require.NoError(t, repo.BindThread(ctx, th, at), "binding again is a no-op")
		require.NoError(t, repo.BindThread(ctx, domain.SlackThread{ChannelID: "C1", ThreadTS: "1.2", SessionID: 8, TriggerID: tr.ID}, at))
		got, found, err := repo.Thread(ctx, "C1", "1.2")
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, th, got, "the first binding stands")
		got, found, err = repo.ThreadOfSession(ctx, 7)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, th, got)
		_, found, err = repo.ThreadOfSession(ctx, 8)
		require.NoError(t, err)
		require.False(t, found)

		require.NoError(t, repo.DeleteTrigger(ctx, tr.ID))
		require.ErrorIs(t, repo.DeleteTrigger(ctx, tr.ID), domain.ErrTriggerNotFound)
		_, err = repo.Trigger(ctx, tr.ID)
		require.ErrorIs(t, err, domain.ErrTriggerNotFound)
		got, found, err = repo.Thread(ctx, "C1", "1.2")
		require.NoError(t, err)
		require.True(t, found)
		require.Zero(t, got.TriggerID, "the thread keeps its session, not its trigger")
	})
}
