package outbox_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
)

// consumer applies events idempotently through the inbox, counting both
// deliveries and applications.
type consumer struct {
	pool      *pgxpool.Pool
	delivered atomic.Int64
	applied   atomic.Int64
}

func (c *consumer) deliver(ctx context.Context, m outbox.Message) error {
	c.delivered.Add(1)
	return pgdb.InTx(ctx, c.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		fresh, err := inbox.Claim(ctx, tx, m.ID, m.Topic)
		if fresh {
			c.applied.Add(1)
		}
		return err
	})
}

func open(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgdb.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func enqueue(t *testing.T, pool *pgxpool.Pool, subscribers []string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		require.NoError(t, pgdb.InTx(context.Background(), pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
			id, err := outbox.Enqueue(context.Background(), tx, subscribers, outbox.Event{Topic: "t", AggregateKey: "k", Payload: []byte("p")})
			ids = append(ids, id)
			return err
		}))
	}
	return ids
}

func pending(t *testing.T, pool *pgxpool.Pool, subscriber string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM outbox_messages WHERE subscriber = $1 AND delivered_at IS NULL`, subscriber).Scan(&n))
	return n
}

func TestRolledBackEventIsNeverDelivered(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, outbox.Migrations)

	err := pgdb.InTx(context.Background(), pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if _, err := outbox.Enqueue(context.Background(), tx, []string{"a"}, outbox.Event{Topic: "t", AggregateKey: "k"}); err != nil {
			return err
		}
		return errors.New("the change failed")
	})
	require.Error(t, err)
	require.Zero(t, pending(t, pool, "a"))
}

func TestCrashBetweenHandOffAndMarkRedelivers(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, outbox.Migrations, inbox.Migrations)
	c := &consumer{pool: pool}
	enqueue(t, pool, []string{"a"}, 3)

	// The first relay hands the first message over, then "dies" before it can
	// record the delivery: its context ends mid-round.
	ctx, crash := context.WithCancel(context.Background())
	first := &outbox.Relay{Pool: pool, Subscriber: "a", Deliver: func(ctx context.Context, m outbox.Message) error {
		err := c.deliver(ctx, m)
		crash()
		return err
	}}
	_, err := first.DeliverPending(ctx)
	require.Error(t, err)
	require.EqualValues(t, 1, c.applied.Load(), "the consumer has the first event")
	require.Equal(t, 3, pending(t, pool, "a"), "nothing was marked delivered")

	// A restarted relay redelivers; the consumer applies each event once.
	second := &outbox.Relay{Pool: pool, Subscriber: "a", Deliver: c.deliver}
	n, err := second.DeliverPending(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.EqualValues(t, 4, c.delivered.Load(), "the first event arrived twice")
	require.EqualValues(t, 3, c.applied.Load(), "but was applied once")
	require.Zero(t, pending(t, pool, "a"))
}

func TestFailedDeliveryIsRetriedWithBackoffAndSubscribersAreIndependent(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t, outbox.Migrations)
	enqueue(t, pool, []string{"up", "down"}, 1)

	var calls, heard atomic.Int64
	down := &outbox.Relay{Pool: pool, Subscriber: "down", Backoff: time.Hour, Deliver: func(context.Context, outbox.Message) error {
		calls.Add(1)
		return errors.New("consumer unavailable")
	}, OnFailure: func(_ context.Context, _ outbox.Message, attempts int, err error) {
		heard.Add(int64(attempts))
		require.EqualError(t, err, "consumer unavailable")
	}}
	_, err := down.DeliverPending(context.Background())
	require.NoError(t, err, "a failed delivery is recorded, not returned")
	n, err := down.DeliverPending(context.Background())
	require.NoError(t, err)
	require.Zero(t, n, "not due again until the backoff passes")
	require.EqualValues(t, 1, calls.Load())
	require.EqualValues(t, 1, heard.Load(), "the failure hook heard of attempt 1")

	var lastErr string
	var attempts int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT attempts, last_error FROM outbox_messages WHERE subscriber = 'down'`).Scan(&attempts, &lastErr))
	require.Equal(t, 1, attempts)
	require.Equal(t, "consumer unavailable", lastErr)

	up := &outbox.Relay{Pool: pool, Subscriber: "up", Deliver: func(context.Context, outbox.Message) error { return nil }}
	n, err = up.DeliverPending(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n, "one subscriber's failure does not hold up another")
}

func TestRunDeliversPromptlyAndConcurrentRelaysNeverDoubleDeliver(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t, outbox.Migrations, inbox.Migrations)
	pool, consumerPool := open(t, dbURL), open(t, dbURL) // the consumer is another process
	c := &consumer{pool: consumerPool}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	signal := &outbox.Signal{}
	for range 3 {
		r := &outbox.Relay{Pool: pool, Subscriber: "a", Deliver: c.deliver, Signal: signal, PollInterval: time.Hour, BatchSize: 5}
		wg.Go(func() { assert.NoError(t, r.Run(ctx)) }) // assert: require may not stop a test from another goroutine
	}
	// A long poll interval means only the signal can wake the relays.
	time.Sleep(200 * time.Millisecond)
	enqueue(t, pool, []string{"a"}, 40)
	signal.Notify()
	require.Eventually(t, func() bool { return pending(t, pool, "a") == 0 }, 10*time.Second, 20*time.Millisecond)
	cancel()
	wg.Wait()
	require.EqualValues(t, 40, c.applied.Load())
	require.EqualValues(t, 40, c.delivered.Load(), "SKIP LOCKED: no message was handed to two relays")
}
