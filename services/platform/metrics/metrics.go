// Package metrics exposes a process's metrics in Prometheus's text format
// on a listener of its own, <SERVICE>_METRICS_ADDR (PL-24): the
// OpenTelemetry instruments of the libraries Zimmer runs on — gRPC servers
// and clients (otelgrpc), the gateway's HTTP server (otelhttp), the
// Temporal SDK's workers and client — and Zimmer's own (Meter), plus the Go
// runtime's and the process's. With the variable empty nothing is
// installed: every instrument records into OpenTelemetry's no-op provider.
package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"

	"github.com/zimmerhq/zimmer/services/platform/debughttp"
)

// Path is where the listener serves the metrics.
const Path = "/metrics"

// scope names Zimmer's own instruments.
const scope = "github.com/zimmerhq/zimmer"

// ParseAddr checks the value of variable (e.g. RUNNER_METRICS_ADDR): ""
// stays "" (no metrics), otherwise a host:port. Unlike the debug listener
// any host is allowed — a scraper in another pod must reach it — and an
// empty host (":9464") listens on every interface.
func ParseAddr(variable, value string) (string, error) {
	if value == "" {
		return "", nil
	}
	_, port, err := net.SplitHostPort(value)
	if err != nil || port == "" {
		return "", fmt.Errorf("%s %q: want host:port, e.g. :9464 or 127.0.0.1:9464 (127.0.0.1:0 picks a free port)", variable, value)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return "", fmt.Errorf("%s %q: the port %q is not a number from 0 to 65535", variable, value, port)
	}
	return value, nil
}

// Exporter is a process's installed meter provider and its listener.
type Exporter struct {
	provider *sdkmetric.MeterProvider
	server   *debughttp.Server
}

// Start installs, as the process's global meter provider, one whose
// metrics are served at addr (checked by ParseAddr) under Path, labelled
// service; with addr empty it installs nothing and returns a nil
// Exporter, whose methods do nothing. Call it before anything creates an
// instrument's first use (the global provider delegates, so earlier ones
// are fine too), and Serve the result.
func Start(service, addr string, logger *slog.Logger) (*Exporter, error) {
	if addr == "" {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("metrics: the Prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exp),
		sdkmetric.WithResource(resource.NewSchemaless(semconv.ServiceName(service))),
	)
	handler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)})
	server, err := debughttp.ListenFor(addr, "metrics listener", "metrics", Path, handler, logger)
	if err != nil {
		_ = provider.Shutdown(context.Background())
		return nil, err
	}
	otel.SetMeterProvider(provider)
	return &Exporter{provider: provider, server: server}, nil
}

// Addr is where the metrics are served ("" without an exporter).
func (e *Exporter) Addr() string {
	if e == nil {
		return ""
	}
	return e.server.Addr()
}

// Serve answers scrapes until ctx is done.
func (e *Exporter) Serve(ctx context.Context) error {
	if e == nil {
		<-ctx.Done()
		return nil
	}
	return e.server.Serve(ctx)
}

// Close releases an exporter that never served, or one that has.
func (e *Exporter) Close() {
	if e == nil {
		return
	}
	e.server.Close()
	_ = e.provider.Shutdown(context.Background())
}

// Meter is the meter Zimmer's own instruments are made from.
func Meter() metric.Meter { return otel.Meter(scope) }

// LatencyBuckets are the boundaries, in seconds, of Zimmer's latency
// histograms: from a few milliseconds (a hand-over) to a minute (a wake
// that waited on a busy server). OpenTelemetry's default boundaries are
// for milliseconds.
var LatencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Seconds is one of Zimmer's latency histograms, name in OpenTelemetry's
// dotted form ("zimmer.wake.lateness" → zimmer_wake_lateness_seconds).
// The name is the program's constant, so an invalid one is a bug and
// panics at start, like regexp.MustCompile.
func Seconds(name, description string) metric.Float64Histogram {
	h, err := Meter().Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(description),
		metric.WithExplicitBucketBoundaries(LatencyBuckets...))
	if err != nil {
		panic(fmt.Sprintf("metrics: histogram %q: %v", name, err))
	}
	return h
}

// Counter is one of Zimmer's counters ("zimmer.runner.turns.started" →
// zimmer_runner_turns_started_total), unit in UCUM ("{turn}"); an invalid
// name panics at start, as for Seconds.
func Counter(name, unit, description string) metric.Int64Counter {
	c, err := Meter().Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(description))
	if err != nil {
		panic(fmt.Sprintf("metrics: counter %q: %v", name, err))
	}
	return c
}

// scrapeBudget bounds one Observe callback: a slow database must not hold
// a scrape past Prometheus's own timeout (10 s by default) or pile them up.
const scrapeBudget = 2 * time.Second

// Observe runs observe on every scrape to report instruments (gauges read
// from the database, say), within scrapeBudget. Its error is logged and
// only its own series are missing from that scrape. Without an exporter it
// never runs.
func Observe(logger *slog.Logger, observe func(context.Context, metric.Observer) error, instruments ...metric.Observable) error {
	_, err := Meter().RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, scrapeBudget)
		defer cancel()
		if err := observe(ctx, o); err != nil {
			logger.Warn("a metric could not be observed for this scrape", "error", err)
		}
		return nil
	}, instruments...)
	if err != nil {
		return fmt.Errorf("metrics: register an observation: %w", err)
	}
	return nil
}

// TemporalHandler is the Temporal SDK's metrics, reported through the
// global provider with monotonic counters (Prometheus _total series); nil
// when no exporter is installed, so the SDK keeps its no-op handler.
func (e *Exporter) TemporalHandler(logger *slog.Logger) client.MetricsHandler {
	if e == nil {
		return nil
	}
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                e.provider.Meter("temporal-sdk-go"),
		UseMonotonicCounters: true,
		// The default panics on an instrument's error; a metric is never
		// worth a process.
		OnError: func(err error) { logger.Warn("a Temporal SDK metric failed", "error", err) },
	})
}
