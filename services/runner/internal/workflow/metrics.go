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
