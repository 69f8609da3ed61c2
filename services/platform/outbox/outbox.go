// Package outbox delivers a service's events to other contexts at least once.
//
// A producer writes its events inside the transaction that makes the change
// (Enqueue, Queue, or Rows inside its own statement), so the change and the
// promise to announce it commit together, and then notifies its Signal.
// A Relay per subscriber then claims due messages with a lease, hands each
// to a Deliver function with no transaction open, and acknowledges it only
// after the hand-off succeeded: a crash between the two redelivers the
// message once the lease expires, never loses it. Consumers therefore apply
// events idempotently (see package inbox). A message no retry can deliver
// is parked as dead (dead_at) and an operator hears of it once; delivered
// messages are deleted after a retention (PruneDelivered, run on a
// schedule: RetentionPolicy with package retention).
package outbox

import (
	"context"
	"embed"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/tracing"
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
	// Trace is the span of the request that made the change, continued by
	// the relay's delivery (PL-26); the producer sets it with TraceOf.
	Trace Trace
}

// Trace is a span's W3C trace context, as an outbox row keeps it.
type Trace struct{ Parent, State string }

// TraceOf is ctx's span, for Event.Trace; zero when tracing is off.
func TraceOf(ctx context.Context) Trace {
	parent, state := tracing.Inject(ctx)
	return Trace{Parent: parent, State: state}
}

// Addressed is an event with the subscribers it goes to.
type Addressed struct {
	Event       Event
	Subscribers []string
}

// Message is one event addressed to one subscriber.
type Message struct {
	Event
	Subscriber string
	Seq        int64 // the row id: increasing in commit-start order
	Attempts   int   // deliveries tried before this one
}

// Enqueue records evt for every subscriber within tx, carrying ctx's span
// unless evt has one. The event id is returned (and generated if evt.ID is
// empty).
func Enqueue(ctx context.Context, tx pgx.Tx, subscribers []string, evt Event) (string, error) {
	if evt.Trace == (Trace{}) {
		evt.Trace = TraceOf(ctx)
	}
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
	traceparents, tracestates           []string
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
		r.traceparents = append(r.traceparents, a.Event.Trace.Parent)
		r.tracestates = append(r.tracestates, a.Event.Trace.State)
	}
	return a.Event.ID
}

// Len is the number of rows (event × subscriber) recorded.
func (r *Rows) Len() int { return len(r.eventIDs) }

// Args are the statement arguments InsertSQL numbers from its first.
func (r *Rows) Args() []any {
	return []any{r.eventIDs, r.subscribers, r.topics, r.keys, r.payloads, r.traceparents, r.tracestates}
}

// InsertSQL is the INSERT that records the rows, taking Args as $first to
// $first+6. When gate names a relation (e.g. a CTE that returns a row only
// if the producer's change applied), the rows are written once per row of
// gate, so none are written when the change did not apply. Rows keep the
// order they were added in.
func (r *Rows) InsertSQL(gate string, first int) string {
	from := ""
	if gate != "" {
		from = gate + ", "
	}
	return fmt.Sprintf(`
		INSERT INTO outbox_messages (event_id, subscriber, topic, aggregate_key, payload, traceparent, tracestate)
		SELECT m.event_id, m.subscriber, m.topic, m.aggregate_key, m.payload, m.traceparent, m.tracestate
		FROM %sunnest($%d::uuid[], $%d::text[], $%d::text[], $%d::text[], $%d::bytea[], $%d::text[], $%d::text[])
			WITH ORDINALITY AS m(event_id, subscriber, topic, aggregate_key, payload, traceparent, tracestate, n)
		ORDER BY m.n`, from, first, first+1, first+2, first+3, first+4, first+5, first+6)
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
