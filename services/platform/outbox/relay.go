package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/zimmerhq/zimmer/services/platform/tracing"
)

// DeliverFunc hands one message to its subscriber. A nil error means the
// subscriber has it. Any error leaves the message for a retry, unless its
// class parks it as dead (see Relay.DeadAfter and Reject).
type DeliverFunc func(ctx context.Context, m Message) error

// Relay delivers one subscriber's pending messages in three steps, none of
// which holds a transaction, a row lock or a pooled connection across the
// subscriber's RPC:
//
//  1. claim: one autocommit statement picks due messages in id order
//     (FOR UPDATE SKIP LOCKED, so concurrent relays never pick one row
//     twice), moves their next_attempt_at to the end of a lease, and
//     returns them; until the lease ends no other relay sees them;
//  2. deliver: Deliver runs bounded by DeliveryTimeout, and only while the
//     lease has at least that long left, so a message is never being handed
//     over when another relay may claim it;
//  3. record: the outcome is written only while the lease is still this
//     relay's (next_attempt_at unchanged): delivered, due again after a
//     backoff, or parked as dead.
//
// A relay that dies holding a lease leaves its messages to wait until the
// lease ends; one that is stopped releases them at once.
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

	// OnDead, when set, hears once of each message parked as dead, with the
	// error that decided it (also kept in last_error). Same constraints as
	// OnFailure, which has heard of the failure first.
	OnDead func(ctx context.Context, m Message, err error)

	// PollInterval bounds how long a message waits when no Signal
	// announces it (a producer in another process) (default 1s). Backoff is
	// the first retry delay, doubled per attempt up to MaxBackoff (defaults
	// 500ms and 1m). BatchSize caps the messages claimed per round (default
	// 100).
	PollInterval time.Duration
	Backoff      time.Duration
	MaxBackoff   time.Duration
	BatchSize    int

	// Concurrency is how many aggregates a round hands over at once
	// (default 1: the whole batch one by one, in id order). Messages of one
	// aggregate always go one at a time, in id order; raise it only for a
	// subscriber to which different aggregates are independent (no message
	// needs another aggregate's to have arrived first), so that a burst is
	// not paced by one RPC at a time.
	Concurrency int

	// DeliveryTimeout bounds one hand-off (default 5s): a hung subscriber
	// costs a timeout, a transient failure. Lease is how long claimed
	// messages stay hidden from other relays (default three delivery
	// timeouts), and so how long a dead relay delays them; it must exceed
	// DeliveryTimeout.
	DeliveryTimeout time.Duration
	Lease           time.Duration

	// DeadAfter is the number of permanent failures (see classify) that
	// parks a message as dead (default 20: with the default backoff, about a
	// quarter of an hour of a subscriber answering the same way).
	DeadAfter int
}

// claimed is a message as this relay holds it.
type claimed struct {
	Message
	permanentFailures int
}

// Run delivers until ctx is done.
func (r *Relay) Run(ctx context.Context) error {
	r.defaults()
	if err := r.validate(); err != nil {
		return err
	}
	wake := r.Signal.listen()
	ticker := time.NewTicker(r.PollInterval)
	defer ticker.Stop()
	for {
		for {
			n, stopped, err := r.round(ctx)
			if err != nil && ctx.Err() == nil {
				r.Logger.Error("outbox relay round failed", "subscriber", r.Subscriber, "error", err)
			}
			if n < r.BatchSize || stopped || err != nil {
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

// DeliverPending runs one round: it claims up to BatchSize due messages,
// delivers them one by one in id order and records each outcome. It returns
// how many messages it claimed. Messages it claimed but did not hand over
// (the lease ran short, or ctx ended) are released, due again at once.
func (r *Relay) DeliverPending(ctx context.Context) (int, error) {
	n, _, err := r.round(ctx)
	return n, err
}

// round is DeliverPending, also reporting whether it stopped early because
// the subscriber is unreachable (the rest of the batch was released).
func (r *Relay) round(ctx context.Context) (claimedN int, stopped bool, err error) {
	r.defaults()
	if err := r.validate(); err != nil {
		return 0, false, err
	}
	// Read before the claim, so this relay's idea of the lease's end is never
	// later than the database's.
	leaseEnds := time.Now().Add(r.Lease)
	msgs, lease, err := r.claim(ctx)
	if err != nil {
		return 0, false, err
	}
	if r.Concurrency > 1 {
		return r.deliverConcurrently(ctx, lease, leaseEnds, msgs)
	}
	for i, m := range msgs {
		if ctx.Err() != nil || time.Until(leaseEnds) < r.DeliveryTimeout {
			r.release(ctx, lease, msgs[i:])
			return len(msgs), false, ctx.Err()
		}
		err := r.deliverOne(ctx, lease, m)
		if errors.Is(err, errUnreachable) {
			r.release(ctx, lease, msgs[i+1:])
			return len(msgs), true, nil
		}
		if err != nil {
			r.release(ctx, lease, msgs[i:])
			return len(msgs), false, err
		}
	}
	return len(msgs), false, nil
}

// deliverConcurrently is round's delivery with Concurrency > 1: each
// aggregate's messages in id order by one goroutine, up to Concurrency
// aggregates at a time. The first unreachable subscriber or failure to
// record stops every aggregate before its next message, as the serial
// round stops; what was not handed over is released.
func (r *Relay) deliverConcurrently(ctx context.Context, lease, leaseEnds time.Time, msgs []claimed) (int, bool, error) {
	var (
		mu       sync.Mutex
		stopped  bool
		firstErr error
		left     []claimed
	)
	// halt records how the aggregate's run ended; rest is what it did not
	// hand over.
	halt := func(rest []claimed, unreachable bool, err error) {
		mu.Lock()
		defer mu.Unlock()
		left = append(left, rest...)
		stopped = stopped || unreachable
		if firstErr == nil {
			firstErr = err
		}
	}
	halted := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return stopped || firstErr != nil
	}
	slots := make(chan struct{}, r.Concurrency)
	var wg sync.WaitGroup
	for _, group := range byAggregate(msgs) {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			for i, m := range group {
				if halted() || ctx.Err() != nil || time.Until(leaseEnds) < r.DeliveryTimeout {
					halt(group[i:], false, ctx.Err())
					return
				}
				err := r.deliverOne(ctx, lease, m)
				if errors.Is(err, errUnreachable) {
					halt(group[i+1:], true, nil)
					return
				}
				if err != nil {
					halt(group[i:], false, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(left) > 0 {
		slices.SortFunc(left, func(a, b claimed) int { return cmp.Compare(a.Seq, b.Seq) })
		r.release(ctx, lease, left)
	}
	if stopped {
		return len(msgs), true, nil
	}
	return len(msgs), false, firstErr
}

// byAggregate splits msgs (in id order) into each aggregate's messages, in
// id order, the aggregates in the order of their first message.
func byAggregate(msgs []claimed) [][]claimed {
	index := map[string]int{}
	var groups [][]claimed
	for _, m := range msgs {
		i, ok := index[m.AggregateKey]
		if !ok {
			i = len(groups)
			index[m.AggregateKey] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], m)
	}
	return groups
}

// errUnreachable ends a round after a failure of class unreachable was
// recorded: delivering the rest of the batch now would only fail in turn.
var errUnreachable = errors.New("subscriber unreachable")

// claim leases up to BatchSize due messages in one autocommit statement and
// returns them in id order with the lease: the next_attempt_at they now
// carry, which later writes compare against to know the lease is theirs.
func (r *Relay) claim(ctx context.Context) ([]claimed, time.Time, error) {
	rows, err := r.Pool.Query(ctx, `
		UPDATE outbox_messages
		SET next_attempt_at = now() + $3 * interval '1 millisecond'
		WHERE id IN (
			SELECT id FROM outbox_messages
			WHERE subscriber = $1 AND delivered_at IS NULL AND dead_at IS NULL AND next_attempt_at <= now()
			ORDER BY id
			LIMIT $2
			FOR UPDATE SKIP LOCKED)
		RETURNING id, event_id::text, topic, aggregate_key, payload, traceparent, tracestate, attempts, permanent_failures, next_attempt_at`,
		r.Subscriber, r.BatchSize, r.Lease.Milliseconds())
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("claim outbox messages for %s: %w", r.Subscriber, err)
	}
	var lease time.Time
	msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (claimed, error) {
		c := claimed{Message: Message{Subscriber: r.Subscriber}}
		err := row.Scan(&c.Seq, &c.ID, &c.Topic, &c.AggregateKey, &c.Payload, &c.Trace.Parent, &c.Trace.State, &c.Attempts, &c.permanentFailures, &lease)
		return c, err
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("claim outbox messages for %s: %w", r.Subscriber, err)
	}
	slices.SortFunc(msgs, func(a, b claimed) int { return cmp.Compare(a.Seq, b.Seq) })
	return msgs, lease, nil
}

// deliverOne hands m over and records the outcome. An error means the
// outcome is unknown or unrecorded, and m is still this relay's to release.
func (r *Relay) deliverOne(ctx context.Context, lease time.Time, m claimed) error {
	dctx, cancel := context.WithTimeout(ctx, r.DeliveryTimeout)
	derr := r.traced(dctx, m.Message)
	cancel()
	if ctx.Err() != nil {
		// Stopping: the outcome is unknown, so the message stays undelivered.
		return ctx.Err()
	}
	if derr == nil {
		return r.acknowledge(ctx, lease, m)
	}
	return r.recordFailure(ctx, lease, m, derr)
}

// traced runs Deliver under a span continuing the trace of the request
// that made the change (the row's traceparent), so the subscriber's side —
// its gRPC server span and what follows — joins that trace (PL-26). With
// tracing off the span is a no-op.
func (r *Relay) traced(ctx context.Context, m Message) error {
	ctx, span := tracing.Tracer().Start(tracing.Extract(ctx, m.Trace.Parent, m.Trace.State),
		"outbox deliver "+m.Topic, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "zimmer.outbox"),
			attribute.String("messaging.destination.name", r.Subscriber),
			attribute.String("messaging.message.id", m.ID),
			attribute.Int("zimmer.outbox.attempts", m.Attempts),
		))
	defer span.End()
	err := r.Deliver(ctx, m)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "delivery failed")
	}
	return err
}

// acknowledge marks m delivered. It also ends the lease (next_attempt_at
// now), so a message an operator marks undelivered again is due at once.
func (r *Relay) acknowledge(ctx context.Context, lease time.Time, m claimed) error {
	tag, err := r.Pool.Exec(ctx, `
		UPDATE outbox_messages
		SET delivered_at = now(), attempts = attempts + 1, last_error = NULL, next_attempt_at = now()
		WHERE id = $1 AND next_attempt_at = $2`, m.Seq, lease)
	if err != nil {
		return fmt.Errorf("acknowledge outbox message %d: %w", m.Seq, err)
	}
	if tag.RowsAffected() == 0 {
		r.lostLease(m)
	}
	return nil
}

// recordFailure makes m due again after a backoff, or parks it as dead when
// its error's class says no retry can deliver it.
func (r *Relay) recordFailure(ctx context.Context, lease time.Time, m claimed, derr error) error {
	class := classify(derr)
	permanent := 0
	if class == permanentFailure {
		permanent = 1
	}
	dead := class == rejected || (class == permanentFailure && m.permanentFailures+1 >= r.DeadAfter)
	delay := r.backoff(m.Attempts)
	if class == unreachable {
		delay = min(delay, r.PollInterval)
	}
	tag, err := r.Pool.Exec(ctx, `
		UPDATE outbox_messages
		SET attempts = attempts + 1, permanent_failures = permanent_failures + $3, last_error = $4,
			next_attempt_at = now() + $5 * interval '1 millisecond',
			dead_at = CASE WHEN $6::boolean THEN now() END
		WHERE id = $1 AND next_attempt_at = $2`,
		m.Seq, lease, permanent, derr.Error(), delay.Milliseconds(), dead)
	if err != nil {
		return fmt.Errorf("record failed delivery of outbox message %d: %w", m.Seq, err)
	}
	if tag.RowsAffected() == 0 {
		r.lostLease(m)
		return nil
	}
	attrs := []any{"subscriber", r.Subscriber, "topic", m.Topic, "event_id", m.ID, "attempts", m.Attempts + 1, "failure", class.String(), "error", derr}
	if dead {
		r.Logger.Error("outbox message parked as dead; it will not be retried", attrs...)
	} else {
		r.Logger.Warn("outbox delivery failed; will retry", append(attrs, "retry_in", delay.String())...)
	}
	if r.OnFailure != nil {
		r.OnFailure(ctx, m.Message, m.Attempts+1, derr)
	}
	if dead && r.OnDead != nil {
		r.OnDead(ctx, m.Message, derr)
	}
	if class == unreachable {
		return errUnreachable
	}
	return nil
}

// release makes messages this relay claimed but did not hand over (or whose
// outcome is unknown) due again at once. It runs when the round stops early,
// often because ctx is done, so it gets a short context of its own; if it
// fails, the messages are due when the lease ends.
func (r *Relay) release(ctx context.Context, lease time.Time, msgs []claimed) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	ids := make([]int64, len(msgs))
	for i, m := range msgs {
		ids[i] = m.Seq
	}
	_, err := r.Pool.Exec(ctx, `
		UPDATE outbox_messages SET next_attempt_at = now()
		WHERE id = ANY($1) AND next_attempt_at = $2`, ids, lease)
	if err != nil {
		r.Logger.Warn("could not release claimed outbox messages; they are due when their lease ends",
			"subscriber", r.Subscriber, "messages", len(ids), "error", err)
	}
}

// lostLease reports an outcome that came too late to record: the lease had
// ended, so another relay may deliver the message again (harmless to an
// idempotent consumer). The timeouts make it rare: only a database slower
// than the lease's margin causes it.
func (r *Relay) lostLease(m claimed) {
	r.Logger.Warn("outbox lease ended before the delivery's outcome was recorded; the message may be delivered again",
		"subscriber", r.Subscriber, "topic", m.Topic, "event_id", m.ID)
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
	if r.DeliveryTimeout <= 0 {
		r.DeliveryTimeout = 5 * time.Second
	}
	if r.Lease <= 0 {
		r.Lease = 3 * r.DeliveryTimeout
	}
	if r.DeadAfter <= 0 {
		r.DeadAfter = 20
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
}

func (r *Relay) validate() error {
	if r.Lease <= r.DeliveryTimeout {
		return errors.New("outbox relay: the lease must be longer than the delivery timeout, or nothing is ever delivered")
	}
	return nil
}
