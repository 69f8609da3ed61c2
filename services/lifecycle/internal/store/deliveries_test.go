package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

func idleSession(t *testing.T, b testBundle) domain.Session {
	t.Helper()
	s, err := b.sessions.Create.Handle(context.Background(), domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	_, err = fire(t, b.sessions, s.ID, domain.EventStart, domain.Command{RunningJobID: "job-1"})
	require.NoError(t, err)
	out, err := fire(t, b.sessions, s.ID, domain.EventPause, domain.Command{})
	require.NoError(t, err)
	return out.Session
}

func idleDelivery(id string) domain.DeliverCommand {
	return domain.DeliverCommand{DeliveryID: id, Prompt: "next", Goal: "new goal", Mode: domain.DeliverToIdle}
}

// TestADeliveryCommitsWithItsRecord: the turn, the goal and the record of
// the delivery id are one commit, also when the experimental flags fail
// (their savepoint comes after the delivery's writes); another process's
// retry reads the record under the lock and is answered.
func TestADeliveryCommitsWithItsRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `ALTER TABLE session_experimental_flags ADD CONSTRAINT refuse_all CHECK (false)`)
	require.NoError(t, err)
	s := idleSession(t, b)

	got, err := b.sessions.Deliver.Handle(ctx, s.ID, idleDelivery("queue/message/1"))
	require.NoError(t, err)
	require.Nil(t, got.Refused)
	require.Equal(t, s.Version+1, got.Session.Version, "one change")
	stored, err := b.sessions.Get.Handle(ctx, "1")
	require.NoError(t, err)
	require.Equal(t, got.Session.Version, stored.Version)
	require.Equal(t, "new goal", stored.Goal)
	require.Equal(t, domain.StatusRunning, stored.Status)
	require.Equal(t, got.JobID, stored.Markers.RunningJobID)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM deliveries WHERE delivery_id = 'queue/message/1' AND session_id = $1 AND job_id = $2`, s.ID, got.JobID))

	again, err := b.replica().Deliver.Handle(ctx, s.ID, idleDelivery("queue/message/1"))
	require.NoError(t, err)
	require.True(t, again.AlreadyDelivered)
	require.Equal(t, got.JobID, again.JobID)
	require.Equal(t, got.Session.Version, again.Session.Version, "nothing changed")
}

// TestPruneDeliveriesDeletesOnlyThoseBeforeTheCutoff.
func TestPruneDeliveriesDeletesOnlyThoseBeforeTheCutoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	repo := store.NewSessions(b.pool, events.Codec{}, nil, slogx.Discard())
	s := idleSession(t, b)
	_, err := b.sessions.Deliver.Handle(ctx, s.ID, idleDelivery("queue/message/old"))
	require.NoError(t, err)
	_, err = fire(t, b.sessions, s.ID, domain.EventPause, domain.Command{})
	require.NoError(t, err)
	_, err = b.sessions.Deliver.Handle(ctx, s.ID, idleDelivery("queue/message/new"))
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE deliveries SET created_at = now() - interval '8 days' WHERE delivery_id = 'queue/message/old'`)
	require.NoError(t, err)

	n, err := repo.PruneDeliveries(ctx, time.Now().Add(-7*24*time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM deliveries WHERE delivery_id = 'queue/message/old'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM deliveries WHERE delivery_id = 'queue/message/new'`))
}

// TestRetriesRacingTheirDeliveryAreAnsweredNotRefused: the same delivery
// sent several times at once, from two processes, is made once; every
// other call waits for the session's lock, then reads the record the first
// committed and answers it — already delivered, the same job — rather than
// finding the session busy.
func TestRetriesRacingTheirDeliveryAreAnsweredNotRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := idleSession(t, b)
	processes := []app.Sessions{b.sessions, b.replica()}

	const racers = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers []app.Delivered
	)
	for i := range racers {
		wg.Go(func() {
			got, err := processes[i%2].Deliver.Handle(context.Background(), s.ID, idleDelivery("queue/message/7"))
			assert.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			answers = append(answers, got)
		})
	}
	wg.Wait()
	require.Len(t, answers, racers)
	var made, answered int
	jobs := map[string]bool{}
	for _, a := range answers {
		require.Nil(t, a.Refused, "a retry is never refused as busy")
		jobs[a.JobID] = true
		if a.AlreadyDelivered {
			answered++
		} else {
			made++
		}
	}
	require.Equal(t, 1, made)
	require.Equal(t, racers-1, answered)
	require.Len(t, jobs, 1, "every answer names the one job")
}
