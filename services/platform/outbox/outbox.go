// Package outbox delivers a service's events to other contexts at least once.
//
// A producer writes its events inside the transaction that makes the change
// (Enqueue, Queue, or Rows inside its own statement), so the change and the
// promise to announce it commit together, and then notifies its Signal.
// A Relay per subscriber then hands pending messages to a Deliver function,
// marking each delivered only after the hand-off succeeded: a crash between
// the two redelivers the message, never loses it. Consumers therefore apply
// events idempotently (see package inbox).
package outbox

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"sync"
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

// Queue adds the statement that records evt for every subscriber to b, so
// a producer writes its change and its events in one round trip; b must be
// sent inside the change's transaction. It returns the event id.
func Queue(b *pgx.Batch, subscribers []string, evt Event) string {
	var r Rows
	id := r.Add(Addressed{Event: evt, Subscribers: subscribers})
	if r.Len() > 0 {
		b.Queue(r.InsertSQL("", 1), r.Args()...)
	}
	return id
}

// Rows is a set of events to record, as the column arrays of one INSERT …
// SELECT FROM unnest: however many events a change announces, recording
// them costs one statement, and it can ride inside the producer's own
// statement as a data-modifying CTE.
type Rows struct {
	eventIDs, subscribers, topics, keys []string
	payloads                            [][]byte
}

// Add records a for each of its subscribers, generating the event id when
// empty, and returns the id.
func (r *Rows) Add(a Addressed) string {
	if a.Event.ID == "" {
		a.Event.ID = uuid.NewString()
	}
	for _, sub := range a.Subscribers {
		r.eventIDs = append(r.eventIDs, a.Event.ID)
		r.subscribers = append(r.subscribers, sub)
		r.topics = append(r.topics, a.Event.Topic)
		r.keys = append(r.keys, a.Event.AggregateKey)
		r.payloads = append(r.payloads, a.Event.Payload)
	}
	return a.Event.ID
}

// Len is the number of rows (event × subscriber) recorded.
func (r *Rows) Len() int { return len(r.eventIDs) }

// Args are the statement arguments InsertSQL numbers from its first.
func (r *Rows) Args() []any {
	return []any{r.eventIDs, r.subscribers, r.topics, r.keys, r.payloads}
}

// InsertSQL is the INSERT that records the rows, taking Args as $first to
// $first+4. When gate names a relation (e.g. a CTE that returns a row only
// if the producer's change applied), the rows are written once per row of
// gate, so none are written when the change did not apply. Rows keep the
// order they were added in.
func (r *Rows) InsertSQL(gate string, first int) string {
	from := ""
	if gate != "" {
		from = gate + ", "
	}
	return fmt.Sprintf(`
		INSERT INTO outbox_messages (event_id, subscriber, topic, aggregate_key, payload)
		SELECT m.event_id, m.subscriber, m.topic, m.aggregate_key, m.payload
		FROM %sunnest($%d::uuid[], $%d::text[], $%d::text[], $%d::text[], $%d::bytea[])
			WITH ORDINALITY AS m(event_id, subscriber, topic, aggregate_key, payload, n)
		ORDER BY m.n`, from, first, first+1, first+2, first+3, first+4)
}

// Signal wakes a process's relays when its producers have committed. It
// replaces NOTIFY inside the transaction, which Postgres serializes across
// every committing transaction: the producer calls Notify after its commit,
// and a relay in another process finds the rows on its next poll.
type Signal struct {
	mu      sync.Mutex
	waiters []chan struct{}
}

// Notify wakes every relay listening on s; it never blocks. A nil Signal
// does nothing.
func (s *Signal) Notify() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.waiters {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

func (s *Signal) listen() <-chan struct{} {
	w := make(chan struct{}, 1)
	if s == nil {
		return w
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiters = append(s.waiters, w)
	return w
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

	// Signal, when set, wakes the relay as soon as a producer in this
	// process commits; otherwise it finds new messages by polling.
	Signal *Signal

	// OnFailure, when set, hears of every failed delivery after it was
	// recorded, with the attempts made so far: the place to escalate a
	// message that keeps failing. It runs inside the relay's round, so it
	// must be quick and bound its own I/O.
	OnFailure func(ctx context.Context, m Message, attempts int, err error)

	// PollInterval bounds how long a message waits when no Signal
	// announces it (a producer in another process) (default 1s). Backoff is the first retry delay, doubled per
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
	wake := r.Signal.listen()
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
