package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
)

// row is one outbox message's delivery state.
type row struct {
	Attempts          int
	PermanentFailures int
	LastError         *string
	Delivered         bool
	Dead              bool
	Due               bool
}

func readRow(t *testing.T, pool *pgxpool.Pool, eventID string) row {
	t.Helper()
	var r row
	require.NoError(t, pool.QueryRow(context.Background(), `
		SELECT attempts, permanent_failures, last_error, delivered_at IS NOT NULL, dead_at IS NOT NULL, next_attempt_at <= now()
		FROM outbox_messages WHERE event_id = $1`, eventID).
		Scan(&r.Attempts, &r.PermanentFailures, &r.LastError, &r.Delivered, &r.Dead, &r.Due))
	return r
}

// TestDeliveryHoldsNoLockAndHidesTheMessage: while the subscriber's RPC
// runs, the claimed row is not locked (a slow subscriber pins neither a
// connection nor row locks), yet no other relay can claim it.
func TestDeliveryHoldsNoLockAndHidesTheMessage(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, outbox.Migrations)
	ids := enqueue(t, pool, []string{"a"}, 1)

	other := &outbox.Relay{Pool: pool, Subscriber: "a", Deliver: func(context.Context, outbox.Message) error {
		return errors.New("the other relay must not get the message")
	}}
	var checked bool
	r := &outbox.Relay{Pool: pool, Subscriber: "a", Deliver: func(ctx context.Context, m outbox.Message) error {
		require.Equal(t, "a", m.Subscriber)
		err := pgdb.InTx(ctx, pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `SELECT 1 FROM outbox_messages WHERE id = $1 FOR UPDATE NOWAIT`, m.Seq)
			return err
		})
		require.NoError(t, err, "the row is not locked during delivery")
		n, err := other.DeliverPending(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "the lease hides the message from other relays")
		require.False(t, readRow(t, pool, ids[0]).Due)
		checked = true
		return nil
	}}
	n, err := r.DeliverPending(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, checked)
	got := readRow(t, pool, ids[0])
	require.True(t, got.Delivered)
	require.True(t, got.Due, "acknowledging ends the lease")
}

// TestDeadRelaysMessagesAreDueWhenTheLeaseEnds: a relay that dies after
// claiming (here its pool goes away mid-delivery, so it can record nothing,
// not even a release) leaves its messages hidden until the lease ends, then
// another relay delivers them. Closing the pool inside Deliver also proves
// the relay holds no connection during the hand-off: Close waits for every
// acquired connection.
func TestDeadRelaysMessagesAreDueWhenTheLeaseEnds(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t, outbox.Migrations)
	pool := open(t, dbURL)
	enqueue(t, pool, []string{"a"}, 2)

	dying, err := pgdb.Open(context.Background(), dbURL)
	require.NoError(t, err)
	const lease = 2 * time.Second
	var closedInTime atomic.Bool
	first := &outbox.Relay{Pool: dying, Subscriber: "a", Lease: lease, DeliveryTimeout: 500 * time.Millisecond,
		Deliver: func(context.Context, outbox.Message) error {
			closed := make(chan struct{})
			go func() { dying.Close(); close(closed) }()
			select {
			case <-closed:
				closedInTime.Store(true)
			case <-time.After(5 * time.Second):
			}
			return nil
		}}
	claimedAt := time.Now()
	n, err := first.DeliverPending(context.Background())
	require.Error(t, err, "the outcome could not be recorded")
	require.Equal(t, 2, n)
	require.True(t, closedInTime.Load(), "no connection was held during the hand-off")

	var delivered atomic.Int64
	second := &outbox.Relay{Pool: pool, Subscriber: "a", Deliver: func(context.Context, outbox.Message) error {
		delivered.Add(1)
		return nil
	}}
	n, err = second.DeliverPending(context.Background())
	require.NoError(t, err)
	require.Zero(t, n, "still leased to the dead relay")
	require.Eventually(t, func() bool {
		_, err := second.DeliverPending(context.Background())
		require.NoError(t, err)
		return delivered.Load() == 2
	}, 10*time.Second, 50*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(claimedAt), lease, "not before the lease ended")
	require.Zero(t, pending(t, pool, "a"))
}

// TestAShortLeaseIsNeverOverrun: a delivery starts only while the lease has
// a whole DeliveryTimeout left; what the relay cannot reach in time it
// releases, due again at once rather than after the lease.
func TestAShortLeaseIsNeverOverrun(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, outbox.Migrations)
	enqueue(t, pool, []string{"a"}, 5)

	const lease, timeout = 600 * time.Millisecond, 200 * time.Millisecond
	var starts []time.Duration
	begin := time.Now()
	r := &outbox.Relay{Pool: pool, Subscriber: "a", Lease: lease, DeliveryTimeout: timeout,
		Deliver: func(ctx context.Context, _ outbox.Message) error {
			starts = append(starts, time.Since(begin))
			deadline, ok := ctx.Deadline()
			require.True(t, ok, "every hand-off is bounded")
			require.LessOrEqual(t, time.Until(deadline), timeout)
			time.Sleep(250 * time.Millisecond)
			return nil
		}}
	n, err := r.DeliverPending(context.Background())
	require.NoError(t, err)
	require.Equal(t, 5, n, "all five were claimed")
	require.NotEmpty(t, starts)
	require.Less(t, len(starts), 5, "the lease ran short before the last ones")
	for _, s := range starts {
		require.LessOrEqual(t, s, lease-timeout, "a delivery started with less than a timeout of lease left")
	}
	var released int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM outbox_messages WHERE delivered_at IS NULL AND next_attempt_at <= now()`).Scan(&released))
	require.Equal(t, 5-len(starts), released, "the rest are due again at once")
}

func TestRelayRefusesALeaseNoDeliveryFits(t *testing.T) {
	t.Parallel()
	r := &outbox.Relay{Subscriber: "a", Lease: time.Second, DeliveryTimeout: time.Second}
	_, err := r.DeliverPending(context.Background())
	require.ErrorContains(t, err, "lease must be longer than the delivery timeout")
	require.Error(t, r.Run(context.Background()))
}

// deadLetterCase drives one message against a subscriber that always fails
// with err, round after round, and reports how it ended.
type deadLetterCase struct {
	name      string
	err       error
	deadAfter int // attempts that park it; 0: never within the rounds tried
}

func TestUndeliverableMessagesAreParkedAsDeadWithOneAlert(t *testing.T) {
	t.Parallel()
	const deadAfter, rounds = 3, 8
	tests := []deadLetterCase{
		{"the subscriber refuses the event", status.Error(codes.InvalidArgument, "event.payload: missing"), 1},
		{"the deliverer rejects its own input", outbox.Reject(errors.New("decode session event: bad wire")), 1},
		{"a permanent error, wrapped by the deliverer", fmt.Errorf("deliver t: %w", status.Error(codes.Internal, "internal error")), deadAfter},
		{"a missing method", status.Error(codes.Unimplemented, "unknown service"), deadAfter},
		{"the subscriber is down", status.Error(codes.Unavailable, "connection refused"), 0},
		{"the subscriber is slow", status.Error(codes.DeadlineExceeded, "deadline exceeded"), 0},
		{"the subscriber is overloaded", status.Error(codes.ResourceExhausted, "slow down"), 0},
		{"an error with no status", errors.New("dial: no route to host"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.DB(t, outbox.Migrations)
			id := enqueue(t, pool, []string{"a"}, 1)[0]

			var calls, failures int
			var dead []error
			r := &outbox.Relay{
				Pool: pool, Subscriber: "a", DeadAfter: deadAfter, Backoff: time.Millisecond, MaxBackoff: time.Millisecond,
				Deliver:   func(context.Context, outbox.Message) error { calls++; return tt.err },
				OnFailure: func(context.Context, outbox.Message, int, error) { failures++ },
				OnDead: func(_ context.Context, m outbox.Message, err error) {
					require.Equal(t, id, m.ID)
					dead = append(dead, err)
				},
			}
			for range rounds {
				time.Sleep(5 * time.Millisecond) // past the backoff
				_, err := r.DeliverPending(context.Background())
				require.NoError(t, err)
			}

			got := readRow(t, pool, id)
			require.Equal(t, tt.err.Error(), *got.LastError, "the error is kept on the row")
			require.False(t, got.Delivered)
			if tt.deadAfter == 0 {
				require.False(t, got.Dead, "transient failures are retried for ever")
				require.Equal(t, rounds, calls)
				require.Empty(t, dead)
				require.Zero(t, got.PermanentFailures)
				return
			}
			require.True(t, got.Dead)
			require.Equal(t, tt.deadAfter, calls, "parked after %d attempts, then never tried again", tt.deadAfter)
			require.Equal(t, tt.deadAfter, got.Attempts)
			require.Equal(t, tt.deadAfter, failures)
			require.Equal(t, []error{tt.err}, dead, "one alert, with the deciding error")
		})
	}
}

// TestPermanentFailuresAloneDecideDeath: transient failures between
// permanent ones do not count towards DeadAfter.
func TestPermanentFailuresAloneDecideDeath(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, outbox.Migrations)
	id := enqueue(t, pool, []string{"a"}, 1)[0]
	answers := []error{
		status.Error(codes.Internal, "bug"),
		status.Error(codes.Unavailable, "down"),
		status.Error(codes.Unavailable, "down"),
		status.Error(codes.Internal, "bug"),
	}
	var call int
	r := &outbox.Relay{Pool: pool, Subscriber: "a", DeadAfter: 3, Backoff: time.Millisecond, MaxBackoff: time.Millisecond,
		Deliver: func(context.Context, outbox.Message) error { call++; return answers[call-1] }}
	for range answers {
		time.Sleep(5 * time.Millisecond)
		_, err := r.DeliverPending(context.Background())
		require.NoError(t, err)
	}
	got := readRow(t, pool, id)
	require.Equal(t, 4, got.Attempts)
	require.Equal(t, 2, got.PermanentFailures)
	require.False(t, got.Dead, "two permanent failures of three")
}

func TestDeadMessagesAreNeverClaimed(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, outbox.Migrations)
	ids := enqueue(t, pool, []string{"a"}, 2)
	_, err := pool.Exec(context.Background(),
		`UPDATE outbox_messages SET dead_at = now(), next_attempt_at = now() - interval '1 hour' WHERE event_id = $1`, ids[0])
	require.NoError(t, err)

	var got []string
	r := &outbox.Relay{Pool: pool, Subscriber: "a", Deliver: func(_ context.Context, m outbox.Message) error {
		got = append(got, m.ID)
		return nil
	}}
	n, err := r.DeliverPending(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{ids[1]}, got)
	require.False(t, readRow(t, pool, ids[0]).Delivered)
}

func TestPruneDeletesOnlyDeliveredMessagesPastTheCutoff(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, outbox.Migrations)
	ctx := context.Background()
	ids := enqueue(t, pool, []string{"a"}, 5)
	old, recent, waiting, leased, dead := ids[0], ids[1], ids[2], ids[3], ids[4]
	for _, q := range []struct {
		sql string
		id  string
	}{
		{`UPDATE outbox_messages SET delivered_at = now() - interval '25 hours' WHERE event_id = $1`, old},
		{`UPDATE outbox_messages SET delivered_at = now() - interval '1 hour' WHERE event_id = $1`, recent},
		{`UPDATE outbox_messages SET created_at = now() - interval '30 days', attempts = 99 WHERE event_id = $1`, waiting},
		{`UPDATE outbox_messages SET created_at = now() - interval '30 days', next_attempt_at = now() + interval '1 minute' WHERE event_id = $1`, leased},
		{`UPDATE outbox_messages SET created_at = now() - interval '30 days', dead_at = now() - interval '30 days' WHERE event_id = $1`, dead},
	} {
		_, err := pool.Exec(ctx, q.sql, q.id)
		require.NoError(t, err)
	}
	// Enough old deliveries to take more than one batch.
	_, err := pool.Exec(ctx, `
		INSERT INTO outbox_messages (event_id, subscriber, topic, aggregate_key, payload, delivered_at)
		SELECT gen_random_uuid(), 'a', 't', 'k', '', now() - interval '2 days' FROM generate_series(1, 12000)`)
	require.NoError(t, err)

	var cutoff time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT now() - interval '24 hours'`).Scan(&cutoff))
	n, err := outbox.PruneDelivered(ctx, pool, cutoff)
	require.NoError(t, err)
	require.EqualValues(t, 12001, n)

	rows, err := pool.Query(ctx, `SELECT event_id::text FROM outbox_messages ORDER BY id`)
	require.NoError(t, err)
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{recent, waiting, leased, dead}, left,
		"only deliveries past the cutoff go; undelivered, leased and dead messages stay")

	n, err = outbox.PruneDelivered(ctx, pool, cutoff)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestAnUnreachableSubscriberCostsOneProbeAndIsRetriedWithinAPoll: while the
// subscriber is down, a round tries one message and leaves the rest of the
// batch untouched; the failed one is due again within PollInterval whatever
// the backoff, so the backlog flows as soon as the subscriber is back.
func TestAnUnreachableSubscriberCostsOneProbeAndIsRetriedWithinAPoll(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, outbox.Migrations)
	ids := enqueue(t, pool, []string{"a"}, 5)
	var calls atomic.Int64
	var down atomic.Bool
	down.Store(true)
	r := &outbox.Relay{Pool: pool, Subscriber: "a", PollInterval: 200 * time.Millisecond,
		Backoff: time.Hour, MaxBackoff: time.Hour,
		Deliver: func(context.Context, outbox.Message) error {
			calls.Add(1)
			if down.Load() {
				return status.Error(codes.Unavailable, "connection refused")
			}
			return nil
		}}

	_, err := r.DeliverPending(context.Background())
	require.NoError(t, err, "an unreachable subscriber is recorded, not an error of the round")
	require.EqualValues(t, 1, calls.Load(), "one probe, not one failure per message")
	first := readRow(t, pool, ids[0])
	require.Equal(t, 1, first.Attempts)
	require.Zero(t, first.PermanentFailures, "unreachable is never a step towards dead")
	for _, id := range ids[1:] {
		got := readRow(t, pool, id)
		require.Zero(t, got.Attempts, "the rest of the batch was not tried")
		require.True(t, got.Due, "and was released, due at once")
	}

	down.Store(false)
	time.Sleep(300 * time.Millisecond) // past PollInterval, far short of Backoff
	for range 2 {
		_, err = r.DeliverPending(context.Background())
		require.NoError(t, err)
	}
	for _, id := range ids {
		require.True(t, readRow(t, pool, id).Delivered, "every message delivered once the subscriber is back")
	}
}

// TestConcurrentRelayKeepsEachAggregatesOrder: with Concurrency, a round
// hands different aggregates over at once — a burst is not paced by one
// RPC at a time — while each aggregate's messages still go one at a time,
// in id order, each once.
func TestConcurrentRelayKeepsEachAggregatesOrder(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, outbox.Migrations)
	const aggregates, each, concurrency = 12, 4, 6
	var want []string // event ids in commit order, each "<aggregate>/<n>" in its payload
	for n := range each {
		for a := range aggregates {
			require.NoError(t, pgdb.InTx(t.Context(), pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
				id, err := outbox.Enqueue(t.Context(), tx, []string{"a"}, outbox.Event{
					Topic: "t", AggregateKey: fmt.Sprint(a), Payload: fmt.Appendf(nil, "%d/%d", a, n)})
				want = append(want, id)
				return err
			}))
		}
	}
	var (
		mu        sync.Mutex
		got       = map[string][]string{} // aggregate → payloads in arrival order
		inFlight  = map[string]bool{}
		now, peak int
	)
	r := &outbox.Relay{Pool: pool, Subscriber: "a", Concurrency: concurrency, Deliver: func(_ context.Context, m outbox.Message) error {
		mu.Lock()
		require.False(t, inFlight[m.AggregateKey], "two messages of aggregate %s at once", m.AggregateKey)
		inFlight[m.AggregateKey], now = true, now+1
		peak = max(peak, now)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // the subscriber's RPC
		mu.Lock()
		defer mu.Unlock()
		inFlight[m.AggregateKey], now = false, now-1
		got[m.AggregateKey] = append(got[m.AggregateKey], string(m.Payload))
		return nil
	}}
	n, err := r.DeliverPending(t.Context())
	require.NoError(t, err)
	require.Equal(t, aggregates*each, n)
	for a := range aggregates {
		var in []string
		for i := range each {
			in = append(in, fmt.Sprintf("%d/%d", a, i))
		}
		require.Equal(t, in, got[fmt.Sprint(a)], "aggregate %d's messages in id order, each once", a)
	}
	// Concurrency aggregates in flight at once: a burst is not paced by one
	// RPC at a time (a wall-clock bound would say the same, less surely on
	// a busy machine).
	require.Equal(t, concurrency, peak, "up to Concurrency aggregates at once, never more")
	for _, id := range want {
		require.True(t, readRow(t, pool, id).Delivered)
	}
}

// TestConcurrentRelayStopsAtAnUnreachableSubscriber: as the serial round
// does, the first unreachable answer stops the round; what was not handed
// over is released, due again at once, and delivered by the next round.
func TestConcurrentRelayStopsAtAnUnreachableSubscriber(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, outbox.Migrations)
	for a := range 8 {
		require.NoError(t, pgdb.InTx(t.Context(), pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
			for range 3 {
				if _, err := outbox.Enqueue(t.Context(), tx, []string{"a"}, outbox.Event{Topic: "t", AggregateKey: fmt.Sprint(a), Payload: []byte("p")}); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	var calls atomic.Int32
	down := atomic.Bool{}
	down.Store(true)
	r := &outbox.Relay{Pool: pool, Subscriber: "a", Concurrency: 4, Deliver: func(context.Context, outbox.Message) error {
		calls.Add(1)
		if down.Load() {
			return status.Error(codes.Unavailable, "restarting")
		}
		return nil
	}}
	_, err := r.DeliverPending(t.Context())
	require.NoError(t, err)
	require.LessOrEqual(t, int(calls.Load()), 4, "each aggregate in flight stops at its first unreachable answer; no other starts")
	require.Equal(t, 24, pending(t, pool, "a"))
	down.Store(false)
	require.Eventually(t, func() bool {
		_, err := r.DeliverPending(t.Context())
		require.NoError(t, err)
		return pending(t, pool, "a") == 0
	}, 10*time.Second, 50*time.Millisecond, "the released messages are delivered once the subscriber is back")
}
