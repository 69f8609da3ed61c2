// Package temporalx connects a service to Temporal and runs its worker;
// its schedules are package periodic's.
package temporalx

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// ProbeWorkflowName is registered on every service's task queue. Running it
// answers "is a worker of this service polling its queue right now?" — the
// readiness question a health check cannot, because health only proves the
// gRPC server is up.
const ProbeWorkflowName = "zimmer.Probe"

// TaskQueue is the task queue a service's worker polls.
func TaskQueue(service string) string { return "zimmer-" + service }

// Option adjusts how Dial connects.
type Option func(*client.Options)

// WithMetrics reports the SDK's client and worker metrics through h (nil
// keeps the SDK's no-op handler).
func WithMetrics(h client.MetricsHandler) Option {
	return func(o *client.Options) { o.MetricsHandler = h }
}

// WithInterceptor adds i to the client and so to every worker made from
// it (the tracing interceptor); nil adds nothing.
func WithInterceptor(i interceptor.ClientInterceptor) Option {
	return func(o *client.Options) {
		if i != nil {
			o.Interceptors = append(o.Interceptors, i)
		}
	}
}

// Dial connects to Temporal, logging through logger.
func Dial(ctx context.Context, address, namespace string, logger *slog.Logger, opts ...Option) (client.Client, error) {
	options := client.Options{
		HostPort:  address,
		Namespace: namespace,
		Logger:    tlog.NewStructuredLogger(logger),
		// No gzip (the SDK's default): Zimmer's requests and answers are a
		// few hundred bytes to a few KB (heartbeats, polls, small payloads)
		// and the server is on the same host or network, so compressing
		// costs CPU on both sides for nothing. Issue 21: gzip was 13 % of
		// the runner's CPU with 200 agents heartbeating
		// (BenchmarkTemporalCompression).
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}},
	}
	for _, opt := range opts {
		opt(&options)
	}
	c, err := client.DialContext(ctx, options)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w", address, namespace, err)
	}
	return c, nil
}

// NewWorker returns a worker for service's task queue with the probe
// workflow registered; the service registers its own workflows and
// activities before starting it.
func NewWorker(c client.Client, service string) worker.Worker {
	w := worker.New(c, TaskQueue(service), worker.Options{})
	w.RegisterWorkflowWithOptions(probe(service), workflow.RegisterOptions{Name: ProbeWorkflowName})
	return w
}

// probe returns the service's name, proving which worker answered.
func probe(service string) func(workflow.Context) (string, error) {
	return func(workflow.Context) (string, error) { return service, nil }
}

// Probe runs the probe workflow on service's task queue and returns the name
// the worker answered with.
func Probe(ctx context.Context, c client.Client, service, workflowID string) (string, error) {
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        workflowID,
		TaskQueue: TaskQueue(service),
	}, ProbeWorkflowName)
	if err != nil {
		return "", fmt.Errorf("start probe on %s: %w", TaskQueue(service), err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		return "", fmt.Errorf("probe %s: %w", TaskQueue(service), err)
	}
	return got, nil
}
