package tracing_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/tracing"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{env: nil, want: false}, // make run, the tests: no exporter dialing localhost
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}, want: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://tempo:4318/v1/traces"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}, want: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, want: false},
		{env: map[string]string{"OTEL_SERVICE_NAME": "runner-7"}, want: false},
	} {
		if got := tracing.Enabled(env(tc.env)); got != tc.want {
			t.Errorf("Enabled(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

// TestUnsetInstallsNothing: with no OTEL_* variable, Start installs no
// provider and no propagator; the nil Provider's methods are no-ops.
func TestUnsetInstallsNothing(t *testing.T) {
	before, beforeProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	p, err := tracing.Start(t.Context(), "runner", env(nil), slogx.Discard())
	if err != nil || p != nil {
		t.Fatalf("Start without OTEL_* = %v, %v; want nil, nil", p, err)
	}
	if otel.GetTracerProvider() != before || otel.GetTextMapPropagator() != beforeProp {
		t.Fatal("Start without OTEL_* changed the global provider or propagator")
	}
	if i, err := p.TemporalInterceptor(); i != nil || err != nil {
		t.Fatalf("a nil Provider's Temporal interceptor = %v, %v; want none", i, err)
	}
	p.Close()
	_, span := tracing.Tracer().Start(t.Context(), "x")
	if span.SpanContext().IsValid() || span.IsRecording() {
		t.Fatal("with tracing off a span is OpenTelemetry's no-op one")
	}
	if parent, _ := tracing.Inject(t.Context()); parent != "" {
		t.Fatalf("Inject without a span = %q, want empty", parent)
	}
}

// TestBadExporterIsAClearError: an exporter name autoexport does not know
// fails the start naming the variable.
func TestBadExporterIsAClearError(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "jaegerr")
	_, err := tracing.Start(t.Context(), "runner", env(map[string]string{"OTEL_TRACES_EXPORTER": "jaegerr"}), slogx.Discard())
	if err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER") {
		t.Fatalf("Start with an unknown exporter = %v; want an error naming OTEL_TRACES_EXPORTER", err)
	}
}

// TestCarriedAcrossAnOutboxRowAndAnAgentsEnvironment: a span injected
// into W3C strings (an outbox row's columns) and extracted in another
// process continues the same trace; a child process's environment names
// the span in TRACEPARENT, replacing an inherited one.
func TestCarriedAcrossAnOutboxRowAndAnAgentsEnvironment(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	ctx, request := tp.Tracer("test").Start(t.Context(), "POST /api/v1/")
	parent, state := tracing.Inject(ctx)
	if !strings.HasPrefix(parent, "00-"+request.SpanContext().TraceID().String()+"-") {
		t.Fatalf("Inject = %q, want the request's trace", parent)
	}
	request.End()

	// The relay, later: a fresh context continuing the row's trace.
	relayed, deliver := tp.Tracer("test").Start(tracing.Extract(context.Background(), parent, state), "outbox deliver")
	deliver.End()
	if got := deliver.SpanContext().TraceID(); got != request.SpanContext().TraceID() {
		t.Fatalf("the delivery's trace %s, want the request's %s", got, request.SpanContext().TraceID())
	}
	spans := rec.Ended()
	if len(spans) != 2 || spans[1].Parent().SpanID() != request.SpanContext().SpanID() {
		t.Fatalf("the delivery's parent is %v, want the request's span", spans[1].Parent().SpanID())
	}

	got := tracing.Environ(relayed, []string{"PATH=/bin", "TRACEPARENT=00-inherited", "HOME=/root"})
	want := "TRACEPARENT=00-" + deliver.SpanContext().TraceID().String() + "-" + deliver.SpanContext().SpanID().String() + "-01"
	if !slices.Contains(got, want) || slices.Contains(got, "TRACEPARENT=00-inherited") || !slices.Contains(got, "PATH=/bin") {
		t.Fatalf("Environ = %q, want %q in place of the inherited one", got, want)
	}
	// Without a span: no TRACEPARENT, and not an inherited one either.
	if got := tracing.Environ(context.Background(), []string{"TRACEPARENT=00-inherited", "HOME=/root"}); !slices.Equal(got, []string{"HOME=/root"}) {
		t.Fatalf("Environ without a span = %q", got)
	}
	// Empty or malformed columns leave the context alone.
	for _, bad := range []string{"", "not-a-traceparent"} {
		if sc := trace.SpanContextFromContext(tracing.Extract(context.Background(), bad, "")); sc.IsValid() {
			t.Fatalf("Extract(%q) gave a span context %v", bad, sc)
		}
	}
}

// TestStartInstallsTheProviderAndW3C: with an exporter asked for, spans
// record, carry the service name (OTEL_SERVICE_NAME wins) and the global
// propagator writes W3C traceparent headers, as otelgrpc and otelhttp use.
func TestStartInstallsTheProviderAndW3C(t *testing.T) {
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })
	vars := map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "runner-node-7"}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	p, err := tracing.Start(t.Context(), "runner", env(vars), slogx.Discard())
	if err != nil || p == nil {
		t.Fatalf("Start = %v, %v", p, err)
	}
	t.Cleanup(p.Close)
	ctx, span := tracing.Tracer().Start(t.Context(), "x")
	defer span.End()
	if !span.IsRecording() {
		t.Fatal("the span does not record")
	}
	ro, ok := span.(sdktrace.ReadOnlySpan)
	if !ok {
		t.Fatalf("span is a %T", span)
	}
	if name, _ := ro.Resource().Set().Value("service.name"); name.AsString() != "runner-node-7" {
		t.Fatalf("service.name = %q, want OTEL_SERVICE_NAME's", name.AsString())
	}
	h := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, h)
	if !strings.Contains(h["traceparent"], span.SpanContext().TraceID().String()) {
		t.Fatalf("the global propagator wrote %v, want a W3C traceparent", h)
	}
	if i, err := p.TemporalInterceptor(); i == nil || err != nil {
		t.Fatalf("TemporalInterceptor = %v, %v", i, err)
	}
}
