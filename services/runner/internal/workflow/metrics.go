package workflow

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.temporal.io/sdk/activity"

	"github.com/zimmerhq/zimmer/services/platform/metrics"
	"github.com/zimmerhq/zimmer/services/runner/internal/process"
)

// The runner's turn metrics (PL-24).
var (
	turnsStarted = metrics.Counter("zimmer.runner.turns.started", "{turn}",
		"Agent processes started for turns, by runtime.")
	turnsEnded = metrics.Counter("zimmer.runner.turns.ended", "{turn}",
		"Turns whose agent process ended, by runtime and outcome: exited (0), failed (another code), signaled, stopped (by Zimmer), shutdown (the runner's).")
	turnStartLatency = metrics.Seconds("zimmer.runner.turn.start_latency",
		"From the session's workflow scheduling a turn to its agent process running: the clone's wait, the prompt, the credential, the fork/exec.")
	// The whole paths a user waits through (issue 30): from lifecycle
	// recording the request to the agent running, and from one agent's exit
	// to the next agent of a message that waited in the queue.
	requestToAgent = metrics.Seconds("zimmer.runner.request_to_agent",
		"From lifecycle recording a turn's request (kind first: the session's creation; resume: a follow-up or restart) to its agent process running: the outbox, the workflow, the clone, a slot's wait, the start.")
	exitToNextAgent = metrics.Seconds("zimmer.runner.exit_to_next_agent",
		"From an agent's exit to the agent of the queued message handed over at that exit running: the drain, the hand-over, the start.")
)

// Turn outcomes, the turnsEnded counter's outcome label.
const (
	outcomeExited   = "exited"
	outcomeFailed   = "failed"
	outcomeSignaled = "signaled"
	outcomeStopped  = "stopped"
	outcomeShutdown = "shutdown"
)

// countTurnStarted counts a started agent and times its start from the
// moment the workflow scheduled the turn.
func countTurnStarted(ctx context.Context, runtime string) {
	attrs := metric.WithAttributes(attribute.String("runtime", runtime))
	turnsStarted.Add(ctx, 1, attrs)
	if scheduled := activity.GetInfo(ctx).ScheduledTime; !scheduled.IsZero() {
		turnStartLatency.Record(ctx, time.Since(scheduled).Seconds(), attrs)
	}
}

// timeAsked records the whole path of a turn's first process, started at
// now, in the histogram its request's kind belongs to.
func timeAsked(ctx context.Context, runtime string, asked Asked, now time.Time) {
	h, kind, seconds, ok := askedLatency(asked, now)
	if !ok {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("runtime", runtime)}
	if kind != "" {
		attrs = append(attrs, attribute.String("kind", kind))
	}
	h.Record(ctx, seconds, metric.WithAttributes(attrs...))
}

// askedLatency chooses the histogram (and its kind label, "" for none) a
// turn asked for by asked and started at now is timed in, and the
// seconds. Unknown origins and kinds are not timed. The origin is another
// machine's clock (lifecycle's) or this node's own earlier reading: skew
// that would make it negative counts as no wait at all.
func askedLatency(asked Asked, now time.Time) (h metric.Float64Histogram, kind string, seconds float64, ok bool) {
	if asked.At.IsZero() {
		return nil, "", 0, false
	}
	seconds = max(now.Sub(asked.At).Seconds(), 0)
	switch asked.Kind {
	case KindFirst, KindResume:
		return requestToAgent, asked.Kind, seconds, true
	case KindHandOver:
		return exitToNextAgent, "", seconds, true
	}
	return nil, "", 0, false
}

// countTurnEnded counts an ended agent by outcome.
func countTurnEnded(ctx context.Context, runtime, outcome string) {
	turnsEnded.Add(ctx, 1, metric.WithAttributes(attribute.String("runtime", runtime), attribute.String("outcome", outcome)))
}

// exitOutcome names how an agent that was not stopped by Zimmer ended.
func exitOutcome(exit process.Exit, shutdown bool) string {
	switch {
	case shutdown:
		return outcomeShutdown
	case exit.Signaled():
		return outcomeSignaled
	case exit.Code == 0:
		return outcomeExited
	}
	return outcomeFailed
}

// ObserveAgents reports the agent processes alive on this node on every
// scrape (zimmer_runner_agents{node}).
func (a *Activities) ObserveAgents(logger *slog.Logger) error {
	gauge, err := metrics.Meter().Int64ObservableGauge("zimmer.runner.agents", metric.WithUnit("{process}"),
		metric.WithDescription("Agent processes running turns on this runner node."))
	if err != nil {
		return err
	}
	return metrics.Observe(logger, func(_ context.Context, o metric.Observer) error {
		a.mu.Lock()
		n := len(a.running)
		a.mu.Unlock()
		o.ObserveInt64(gauge, int64(n), metric.WithAttributes(attribute.String("node", a.Node)))
		return nil
	}, gauge)
}
