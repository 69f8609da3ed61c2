// Package tracing installs a process's OpenTelemetry tracer provider from
// the standard OTEL_* environment variables (PL-26) and carries a trace
// across the hops no instrumentation library sees: an outbox row (W3C
// traceparent and tracestate columns) and an agent's environment
// (TRACEPARENT). gRPC (otelgrpc), HTTP (otelhttp) and Temporal (the SDK's
// tracing interceptor) report through the provider Start installs.
//
// With no exporter configured nothing is installed: spans are OpenTelemetry's
// no-op ones, no propagator reads or writes headers, and no exporter dials
// anything.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
)

// scope names Zimmer's own spans.
const scope = "github.com/zimmerhq/zimmer"

// flushBudget bounds the last export at shutdown: a collector that is gone
// must not hold a deploy's stop.
const flushBudget = 5 * time.Second

// Enabled reports whether the environment asks for traces: OTEL_TRACES_EXPORTER
// names an exporter other than "none", or, with it unset, an OTLP endpoint
// is given (OTLP is then the specification's default). Everything unset —
// `make run`, the tests — means no tracing, unlike the SDK's own default of
// an OTLP exporter dialing localhost.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch name := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); name {
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return name != "none"
	}
}

// Provider is a process's installed tracer provider; nil when tracing is
// off, and then its methods do nothing.
type Provider struct {
	tp     *sdktrace.TracerProvider
	logger *slog.Logger
}

// Start installs, as the process's global tracer provider and propagator
// (W3C trace context and baggage), one that exports as the OTEL_*
// variables say (go.opentelemetry.io/contrib/exporters/autoexport:
// OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT, _PROTOCOL, _HEADERS…;
// the SDK reads OTEL_TRACES_SAMPLER and OTEL_BSP_*), naming the process
// service unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says
// otherwise. Without Enabled it installs nothing and returns nil. The
// exporters read the process's own environment, so getenv must be
// os.Getenv's view of it (tests use t.Setenv).
func Start(ctx context.Context, service string, getenv func(string) string, logger *slog.Logger) (*Provider, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: the exporter OTEL_TRACES_EXPORTER=%q asks for: %w", getenv("OTEL_TRACES_EXPORTER"), err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(service)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: the resource (OTEL_RESOURCE_ATTRIBUTES?): %w", err)
	}
	// No WithSampler: the SDK takes OTEL_TRACES_SAMPLER (and _ARG), by
	// default parent-based always-on.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("a trace could not be exported", "error", err)
	}))
	logger.Info("tracing on", "exporter", getenv("OTEL_TRACES_EXPORTER"),
		"endpoint", firstSet(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT")))
	return &Provider{tp: tp, logger: logger}, nil
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// Close exports what is still buffered, within flushBudget, and stops the
// provider.
func (p *Provider) Close() {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushBudget)
	defer cancel()
	if err := p.tp.Shutdown(ctx); err != nil {
		p.logger.Warn("the last traces could not be exported", "error", err)
	}
}

// TemporalInterceptor is the Temporal SDK's tracing interceptor, for a
// client (and so every worker made from it): starts, signals and updates
// carry the caller's span in their headers, and workflows and activities
// run under spans continuing it. Nil when tracing is off.
func (p *Provider) TemporalInterceptor() (interceptor.ClientInterceptor, error) {
	if p == nil {
		return nil, nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalTracerOptions())
	if err != nil {
		return nil, fmt.Errorf("tracing: the Temporal interceptor: %w", err)
	}
	return i, nil
}

// temporalSpanKey holds, in a workflow's context, the span its next
// activities' spans are children of: the interceptor's, or a turn's
// (ContinueInWorkflow).
type temporalSpanKey struct{}

// temporalTracerOptions are the interceptor's, shared with
// ContinueInWorkflow, which must put spans where the interceptor looks.
func temporalTracerOptions() temporalotel.TracerOptions {
	return temporalotel.TracerOptions{
		Tracer:         otel.GetTracerProvider().Tracer("temporal-sdk-go"),
		SpanStarter:    startTemporalSpan,
		SpanContextKey: temporalSpanKey{},
	}
}

// ContinueInWorkflow returns a workflow context whose activities' spans
// continue the trace traceparent names (W3C, as Inject wrote it into a
// signal's payload), under a marker span operation:name. A long-lived
// workflow takes work from signals, and the interceptor parents every
// activity on the workflow run's span, which belongs to the trace of
// whatever started the run; this puts the work back in the trace of the
// request that asked for it. While replaying (no spans are made then) or
// without a traceparent (tracing off) it is ctx.
func ContinueInWorkflow(ctx workflow.Context, traceparent, tracestate, operation, name string) workflow.Context {
	if traceparent == "" || workflow.IsReplaying(ctx) {
		return ctx
	}
	t, err := temporalotel.NewTracer(temporalTracerOptions())
	if err != nil {
		return ctx
	}
	parent, err := t.UnmarshalSpan(map[string]string{"traceparent": traceparent, "tracestate": tracestate})
	if err != nil || parent == nil {
		return ctx
	}
	span, err := t.StartSpan(&interceptor.TracerStartSpanOptions{
		Parent: parent, Operation: operation, Name: name, Time: workflow.Now(ctx),
		Tags: map[string]string{"temporalWorkflowID": workflow.GetInfo(ctx).WorkflowExecution.ID},
	})
	if err != nil {
		return ctx
	}
	// Ended at once, like a run's span: a marker the activities hang off.
	span.Finish(&interceptor.TracerFinishSpanOptions{})
	return workflow.WithValue(ctx, temporalSpanKey{}, span)
}

// startTemporalSpan starts the interceptor's spans, ending a workflow run's
// at once: the SDK ends it when the run returns, and a session's workflow
// runs for as long as the session lives (continuing as new every few
// turns), so its span would never be exported and every activity span
// under it would hang off a parent no collector has. Ended at its start, it
// marks the run's beginning in the request's trace; the activities' spans
// carry the durations.
func startTemporalSpan(ctx context.Context, t trace.Tracer, name string, opts ...trace.SpanStartOption) trace.Span {
	_, span := t.Start(ctx, name, opts...)
	if strings.HasPrefix(name, "RunWorkflow:") {
		span.End()
	}
	return span
}

// Tracer is the tracer Zimmer's own spans are made from.
func Tracer() trace.Tracer { return otel.Tracer(scope) }

// w3c is the format of the hops Zimmer carries itself: fixed, whatever
// propagator the process installed, because a row or an environment outlives
// the process that wrote it.
var w3c = propagation.TraceContext{}

// Inject is ctx's span context in W3C form ("" and "" without a valid one,
// as always when tracing is off).
func Inject(ctx context.Context) (traceparent, tracestate string) {
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// Extract returns ctx continuing the remote span traceparent names (as
// Inject wrote it); an empty or malformed traceparent leaves ctx as it is.
func Extract(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent, "tracestate": tracestate})
}

// Environ is env with TRACEPARENT (and TRACESTATE) set to ctx's span, as a
// child process's environment, so an agent that traces continues Zimmer's
// trace; any TRACEPARENT env already held is replaced. Without a valid span
// (tracing off) it is env, less any inherited TRACEPARENT/TRACESTATE, which
// would name another trace.
func Environ(ctx context.Context, env []string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TRACEPARENT=") && !strings.HasPrefix(kv, "TRACESTATE=") {
			out = append(out, kv)
		}
	}
	parent, state := Inject(ctx)
	if parent != "" {
		out = append(out, "TRACEPARENT="+parent)
	}
	if state != "" {
		out = append(out, "TRACESTATE="+state)
	}
	return out
}
