package outbox_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
)

// TestDeliveryContinuesTheProducersTrace: an event written under a span
// (Enqueue from the context, a Rows statement from Event.Trace) is handed
// to its subscriber under a delivery span whose parent is that span, in
// the same trace, however much later and in whichever relay (PL-26). Not
// parallel: it installs the global tracer provider the relay uses.
func TestDeliveryContinuesTheProducersTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev); _ = tp.Shutdown(context.Background()) })

	pool := pgtest.DB(t, outbox.Migrations)
	ctx, request := tp.Tracer("test").Start(t.Context(), "request")
	request.End()
	byQueue := outbox.Event{Topic: "t.enqueued", AggregateKey: "k", Payload: []byte("p")}
	require.NoError(t, pgdb.InTx(ctx, pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		_, err := outbox.Enqueue(ctx, tx, []string{"a"}, byQueue)
		return err
	}))
	var rows outbox.Rows
	rows.Add(outbox.Addressed{Event: outbox.Event{Topic: "t.rows", AggregateKey: "k", Payload: []byte("p"), Trace: outbox.TraceOf(ctx)},
		Subscribers: []string{"a"}})
	_, err := pool.Exec(ctx, rows.InsertSQL("", 1), rows.Args()...)
	require.NoError(t, err)
	// And one written with tracing off: delivered with no parent.
	require.NoError(t, pgdb.InTx(t.Context(), pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		_, err := outbox.Enqueue(t.Context(), tx, []string{"a"}, outbox.Event{Topic: "t.untraced", AggregateKey: "k", Payload: []byte("p")})
		return err
	}))

	seen := map[string]trace.SpanContext{}
	r := &outbox.Relay{Pool: pool, Subscriber: "a", Deliver: func(ctx context.Context, m outbox.Message) error {
		seen[m.Topic] = trace.SpanContextFromContext(ctx)
		return nil
	}}
	n, err := r.DeliverPending(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, n)

	want := request.SpanContext().TraceID()
	require.Equal(t, want, seen["t.enqueued"].TraceID(), "Enqueue carries ctx's span")
	require.Equal(t, want, seen["t.rows"].TraceID(), "a Rows statement carries Event.Trace")
	require.NotEqual(t, want, seen["t.untraced"].TraceID(), "an event written without a span starts a trace of its own")
	parents := map[string]trace.SpanID{}
	for _, s := range rec.Ended() {
		parents[s.Name()] = s.Parent().SpanID()
		if s.Name() != "request" {
			require.Equal(t, trace.SpanKindProducer, s.SpanKind(), s.Name())
		}
	}
	require.Equal(t, request.SpanContext().SpanID(), parents["outbox deliver t.enqueued"])
	require.Equal(t, request.SpanContext().SpanID(), parents["outbox deliver t.rows"])
	require.False(t, parents["outbox deliver t.untraced"].IsValid())
}
