// Package outbox delivers a service's events to other contexts at least once.
//
// A producer writes its events with Enqueue inside the transaction that makes
// the change, so the change and the promise to announce it commit together.
// A Relay per subscriber then hands pending messages to a Deliver function,
// marking each delivered only after the hand-off succeeded: a crash between
// the two redelivers the message, never loses it. Consumers therefore apply
// events idempotently (see package inbox).
package outbox

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the outbox table's migration set; every producing service
// applies it.
var Migrations = pgdb.MigrationSet{Name: "outbox", FS: pgdb.MigrationsDir(migrations)}

// notifyChannel wakes relays as soon as a producing transaction commits;
// polling is the fallback, not the mechanism.
const notifyChannel = "outbox_messages"

// Event is one fact to announce.
type Event struct {
	ID           string // a UUID; generated when empty
	Topic        string // e.g. "lifecycle.session_created"
	AggregateKey string // e.g. the session id; for reading one aggregate's stream
	Payload      []byte // protobuf-encoded
}

// Addressed is an event with the subscribers it goes to.
type Addressed struct {
	Event       Event
	Subscribers []string
}

// Message is one event addressed to one subscriber.
type Message struct {
	Event
	Seq      int64 // the row id: increasing in commit-start order
	Attempts int   // deliveries tried before this one
}

// Enqueue records evt for every subscriber within tx. The event id is
// returned (and generated if evt.ID is empty).
func Enqueue(ctx context.Context, tx pgx.Tx, subscribers []string, evt Event) (string, error) {
	var b pgx.Batch
	id := Queue(&b, subscribers, evt)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return "", fmt.Errorf("enqueue event %s: %w", evt.Topic, err)
	}
	return id, nil
}

// Queue adds the statements that record evt for every subscriber to b, so
// a producer writes its change and its events in one round trip; b must be
// sent inside the change's transaction. It returns the event id.
func Queue(b *pgx.Batch, subscribers []string, evt Event) string {
	if evt.ID == "" {
		evt.ID = uuid.NewString()
	}
	for _, sub := range subscribers {
		b.Queue(`
			INSERT INTO outbox_messages (event_id, subscriber, topic, aggregate_key, payload)
			VALUES ($1, $2, $3, $4, $5)`,
			evt.ID, sub, evt.Topic, evt.AggregateKey, evt.Payload)
	}
	if len(subscribers) > 0 {
		// Delivered at commit; identical notifications in one transaction
		// collapse into one.
		b.Queue(`SELECT pg_notify($1, '')`, notifyChannel)
	}
	return evt.ID
}

// DeliverFunc hands one message to its subscriber. A nil error means the
// subscriber has it; any error leaves the message pending for a retry.
type DeliverFunc func(ctx context.Context, m Message) error

// Relay delivers one subscriber's pending messages.
type Relay struct {
	Pool       *pgxpool.Pool
	Subscriber string
	Deliver    DeliverFunc
	Logger     *slog.Logger

	// OnFailure, when set, hears of every failed delivery after it was
	// recorded, with the attempts made so far: the place to escalate a
	// message that keeps failing. It runs inside the relay's round, so it
	// must be quick and bound its own I/O.
	OnFailure func(ctx context.Context, m Message, attempts int, err error)

	// PollInterval bounds how long a message waits when a notification is
	// missed (default 1s). Backoff is the first retry delay, doubled per
	// attempt up to MaxBackoff (defaults 500ms and 1m). BatchSize caps the
	// messages claimed per round (default 100).
	PollInterval time.Duration
	Backoff      time.Duration
	MaxBackoff   time.Duration
	BatchSize    int
}

// Run delivers until ctx is done.
func (r *Relay) Run(ctx context.Context) error {
	r.defaults()
	wake := make(chan struct{}, 1)
	go r.listen(ctx, wake)
	ticker := time.NewTicker(r.PollInterval)
	defer ticker.Stop()
	for {
		for {
			n, err := r.DeliverPending(ctx)
			if err != nil && ctx.Err() == nil {
				r.Logger.Error("outbox relay round failed", "subscriber", r.Subscriber, "error", err)
			}
			if n < r.BatchSize || err != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-ticker.C:
		}
	}
}

// DeliverPending runs one round: it claims up to BatchSize due messages in id
// order (skipping rows another relay holds), delivers them one by one and
// records each outcome. It returns how many messages it claimed.
func (r *Relay) DeliverPending(ctx context.Context) (int, error) {
	r.defaults()
	var claimed int
	err := pgdb.InTx(ctx, r.Pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT id, event_id::text, topic, aggregate_key, payload, attempts
			FROM outbox_messages
			WHERE subscriber = $1 AND delivered_at IS NULL AND next_attempt_at <= now()
			ORDER BY id
			LIMIT $2
			FOR UPDATE SKIP LOCKED`, r.Subscriber, r.BatchSize)
		if err != nil {
			return fmt.Errorf("claim outbox messages: %w", err)
		}
		msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Message, error) {
			var m Message
			err := row.Scan(&m.Seq, &m.ID, &m.Topic, &m.AggregateKey, &m.Payload, &m.Attempts)
			return m, err
		})
		if err != nil {
			return fmt.Errorf("claim outbox messages: %w", err)
		}
		claimed = len(msgs)
		for _, m := range msgs {
			if err := r.deliverOne(ctx, tx, m); err != nil {
				return err
			}
		}
		return nil
	})
	return claimed, err
}

func (r *Relay) deliverOne(ctx context.Context, tx pgx.Tx, m Message) error {
	derr := r.Deliver(ctx, m)
	if ctx.Err() != nil {
		// Shutting down: the outcome is unknown, so leave the message pending.
		return ctx.Err()
	}
	if derr == nil {
		_, err := tx.Exec(ctx, `UPDATE outbox_messages SET delivered_at = now(), attempts = attempts + 1, last_error = NULL WHERE id = $1`, m.Seq)
		if err != nil {
			return fmt.Errorf("mark outbox message %d delivered: %w", m.Seq, err)
		}
		return nil
	}
	delay := r.backoff(m.Attempts)
	r.Logger.Warn("outbox delivery failed; will retry",
		"subscriber", r.Subscriber, "topic", m.Topic, "event_id", m.ID,
		"attempts", m.Attempts+1, "retry_in", delay.String(), "error", derr)
	_, err := tx.Exec(ctx, `
		UPDATE outbox_messages
		SET attempts = attempts + 1, last_error = $2, next_attempt_at = now() + $3::interval
		WHERE id = $1`, m.Seq, derr.Error(), fmt.Sprintf("%d milliseconds", delay.Milliseconds()))
	if err != nil {
		return fmt.Errorf("record failed delivery of outbox message %d: %w", m.Seq, err)
	}
	if r.OnFailure != nil {
		r.OnFailure(ctx, m, m.Attempts+1, derr)
	}
	return nil
}

func (r *Relay) backoff(attempts int) time.Duration {
	d := r.Backoff
	for range min(attempts, 30) {
		d *= 2
		if d >= r.MaxBackoff {
			return r.MaxBackoff
		}
	}
	return d
}

// listen forwards commit notifications to wake; on connection loss it
// reconnects, with the poll ticker covering the gap.
func (r *Relay) listen(ctx context.Context, wake chan<- struct{}) {
	for ctx.Err() == nil {
		err := r.listenOnce(ctx, wake)
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			r.Logger.Warn("outbox listener lost; polling until it reconnects", "error", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.PollInterval):
		}
	}
}

func (r *Relay) listenOnce(ctx context.Context, wake chan<- struct{}) error {
	conn, err := r.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+notifyChannel) //nolint:errcheck // best effort before release
	for {
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			return err
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

func (r *Relay) defaults() {
	if r.PollInterval <= 0 {
		r.PollInterval = time.Second
	}
	if r.Backoff <= 0 {
		r.Backoff = 500 * time.Millisecond
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = time.Minute
	}
	if r.BatchSize <= 0 {
		r.BatchSize = 100
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
}
