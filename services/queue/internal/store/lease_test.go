package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
	"github.com/zimmerhq/zimmer/services/queue/internal/store"
)

// requireNothingHeld checks, from connections of its own, that the queue
// holds no transaction open and no lock on the session's queue row or on
// message id: a write of either would go ahead at once.
func requireNothingHeld(t *testing.T, ctx context.Context, pool *pgxpool.Pool, sessionID, id int64) {
	t.Helper()
	var inTx int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
		  AND xact_start IS NOT NULL`).Scan(&inTx))
	require.Zero(t, inTx, "no transaction of the queue's is open")
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM session_queues WHERE session_id = $1 FOR UPDATE NOWAIT`, sessionID)
	require.NoError(t, err, "the session's queue row is not locked")
	_, err = tx.Exec(ctx, `SELECT 1 FROM enqueued_messages WHERE id = $1 FOR UPDATE NOWAIT`, id)
	require.NoError(t, err, "the message's row is not locked")
}

// The send (lifecycle's DeliverTurn) runs with nothing open: no
// transaction, no row lock, no connection taken from the pool — on every
// path, the interrupt's and the hand-over's (under the session's interrupt
// lease) included.
func TestNothingIsHeldOpenWhileTheMessageIsSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.DB(t, store.Migrations)
	ms := store.NewMessages(pool, clock.NewStub(t0))
	for _, pick := range []string{"first pending", "named", "under the interrupt lease"} {
		a := enqueue(t, ms, 1, pick)
		checked := false
		send := func(ctx context.Context, m domain.Message) (string, bool, error) {
			require.Zero(t, pool.Stat().AcquiredConns(), "no pooled connection is pinned")
			requireNothingHeld(t, ctx, pool, 1, m.ID)
			got, err := ms.Message(ctx, 1, m.ID)
			require.NoError(t, err)
			require.Equal(t, domain.StatusProcessing, got.Status, "the claim is committed")
			checked = true
			return "job-" + m.Content, true, nil
		}
		var err error
		switch pick {
		case "first pending":
			_, _, err = ms.Deliver(ctx, 1, domain.Pick{}, send)
		case "named":
			_, _, err = ms.Deliver(ctx, 1, domain.Pick{MessageID: a.ID}, send)
		default:
			err = ms.LockForInterrupt(ctx, 1, func(ctx context.Context) error {
				_, _, err := ms.Deliver(ctx, 1, domain.Pick{MessageID: a.ID, HandedOverFrom: "job-0"}, send)
				return err
			})
		}
		require.NoError(t, err)
		require.True(t, checked, pick)
		got, err := ms.Message(ctx, 1, a.ID)
		require.NoError(t, err)
		require.Equal(t, domain.StatusSent, got.Status, pick)
	}
}

// turns is lifecycle's DeliverTurn as the lease tests need it: a delivery
// id is applied once, in the order the calls land, and a repeat is
// answered with the first job.
type turns struct {
	mu      sync.Mutex
	applied []string
	jobs    map[string]string
}

func (l *turns) deliver(m domain.Message) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := domain.DeliveryID(m)
	if job, ok := l.jobs[id]; ok {
		return job
	}
	if l.jobs == nil {
		l.jobs = map[string]string{}
	}
	l.jobs[id] = "job-" + m.Content
	l.applied = append(l.applied, m.Content)
	return l.jobs[id]
}

func (l *turns) turns() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.applied...)
}

// A holder that dies mid-send (its DeliverTurn landed; it never settles)
// keeps the session's deliveries waiting only until its lease ends: the
// next deliverer puts the message back in line, sends it again (lifecycle
// answers with the turn it already made), marks it sent and goes on, in
// order, with nothing lost or made twice. The dead holder's late answer, if
// it ever comes, finds the message sent.
func TestADeadHoldersClaimExpiresAndTheNextDelivererTakesOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lease = time.Second
	pool := pgtest.DB(t, store.Migrations)
	ms := store.NewMessages(pool, clock.NewStub(t0)).WithLeases(store.Leases{Claim: lease, Interrupt: lease})
	a := enqueue(t, ms, 1, "a")
	enqueue(t, ms, 1, "b")
	lifecycle := &turns{}

	inSend, dead := make(chan time.Time), make(chan struct{})
	type result struct {
		m   domain.Message
		ok  bool
		err error
	}
	late := make(chan result, 1)
	go func() {
		m, ok, err := ms.Deliver(ctx, 1, domain.Pick{}, func(_ context.Context, m domain.Message) (string, bool, error) {
			job := lifecycle.deliver(m)
			inSend <- time.Now()
			<-dead // hung: its context's deadline is ignored
			return job, true, nil
		})
		late <- result{m, ok, err}
	}()
	claimedAt := <-inSend

	var sends []string
	for range 2 {
		m, ok, err := ms.Deliver(ctx, 1, domain.Pick{}, func(_ context.Context, m domain.Message) (string, bool, error) {
			sends = append(sends, m.Content)
			return lifecycle.deliver(m), true, nil
		})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, domain.StatusSent, m.Status)
	}
	require.GreaterOrEqual(t, time.Since(claimedAt), lease-100*time.Millisecond, "the dead holder's claim was waited out")
	require.Equal(t, []string{"a", "b"}, sends, "its message first, then the next")
	require.Equal(t, []string{"a", "b"}, lifecycle.turns(), "each made one turn, in order")
	require.Empty(t, live(t, ms, 1))

	close(dead)
	r := <-late
	require.NoError(t, r.err)
	require.True(t, r.ok)
	require.Equal(t, a.ID, r.m.ID)
	require.Equal(t, "job-a", r.m.DeliveredJobID, "the late answer finds the message sent with its turn")
}

// The interrupt lease of a holder that died is taken over once it ends,
// and not before; another session's is never waited on.
func TestADeadHoldersInterruptLeaseExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lease = time.Second
	ms, _ := newMessages(t)
	ms = ms.WithLeases(store.Leases{Claim: lease, Interrupt: lease})

	held, dead := make(chan time.Time), make(chan struct{})
	go func() {
		_ = ms.LockForInterrupt(ctx, 1, func(context.Context) error {
			held <- time.Now()
			<-dead
			return nil
		})
	}()
	heldAt := <-held
	defer close(dead)
	require.NoError(t, ms.LockForInterrupt(ctx, 2, func(context.Context) error { return nil }))
	require.Less(t, time.Since(heldAt), lease/2, "another session's interrupt does not wait")
	require.NoError(t, ms.LockForInterrupt(ctx, 1, func(context.Context) error {
		require.GreaterOrEqual(t, time.Since(heldAt), lease-100*time.Millisecond, "taken over once the lease ended")
		return nil
	}))
}

// Deliverers racing over one session while some sends fail, some are
// refused and some holders hang past their lease after lifecycle made the
// turn (their late release must not free a claim that is no longer
// theirs): every message becomes exactly one turn, in queue order, and
// ends sent.
func TestRacingDeliverersWithFailuresAndDeadHoldersDeliverEachOnceInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lease = 600 * time.Millisecond
	pool := pgtest.DB(t, store.Migrations)
	ms := store.NewMessages(pool, clock.NewStub(t0)).WithLeases(store.Leases{Claim: lease, Interrupt: time.Second})
	const n = 20
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("m%02d", i)
		enqueue(t, ms, 1, want[i])
	}
	lifecycle := &turns{}
	var (
		mu    sync.Mutex
		calls int
		wg    sync.WaitGroup
	)
	allSent := func() bool {
		all, err := ms.List(ctx, 1)
		if err != nil {
			return false
		}
		for _, m := range all {
			if m.Status != domain.StatusSent {
				return false
			}
		}
		return true
	}
	send := func(_ context.Context, m domain.Message) (string, bool, error) {
		mu.Lock()
		calls++
		k := calls
		mu.Unlock()
		switch k % 7 {
		case 3:
			return "", false, errors.New("lifecycle unavailable")
		case 5:
			return "", false, nil // refused: busy a moment
		case 6:
			lifecycle.deliver(m)
			time.Sleep(lease + 100*time.Millisecond) // made the turn, then hung past the lease
			return "", false, errors.New("the answer was lost")
		}
		return lifecycle.deliver(m), true, nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for range 5 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				_, ok, err := ms.Deliver(ctx, 1, domain.Pick{}, send)
				if (err != nil || !ok) && allSent() {
					return
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, want, lifecycle.turns(), "each message one turn, in queue order")
	all, err := ms.List(ctx, 1)
	require.NoError(t, err)
	require.Len(t, all, n)
	for _, m := range all {
		require.Equal(t, domain.StatusSent, m.Status, m.Content)
		require.Equal(t, "job-"+m.Content, m.DeliveredJobID)
	}
}
