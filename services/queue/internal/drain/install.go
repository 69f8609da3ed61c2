package drain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// Deps is what Install wires.
type Deps struct {
	Lifecycle Lifecycle
	Deliverer Deliverer
	// Alerts pages about exhausted drains; nil logs them (alert.Log).
	Alerts   alert.Raiser
	Sessions Sessions
	Seals    Seals
	// Claims are the delivery claims the expired-claims sweep releases.
	Claims Claims
	Logger *slog.Logger
	// Service names the worker's service: its task queue and the sweep's
	// schedule are named after it. "" is "queue"; tests use their own.
	Service string
	// Delay is the workflow's wait before its first attempt; 0 is
	// DefaultDelay.
	Delay time.Duration
}

// Install registers the drain workflow, its activities, the stale-seal
// sweep and the expired-claims sweep on w, ensures the sweeps' schedules, and returns the Starter that
// pokes the workflows. Call it before w starts.
func Install(ctx context.Context, temporal client.Client, w worker.Worker, deps Deps) (*Starter, error) {
	if temporal == nil || w == nil {
		return nil, errors.New("install the queue drain: no Temporal client or worker")
	}
	if deps.Lifecycle == nil || deps.Deliverer == nil || deps.Sessions == nil || deps.Seals == nil || deps.Claims == nil || deps.Logger == nil {
		return nil, errors.New("install the queue drain: Lifecycle, Deliverer, Sessions, Seals, Claims and Logger are required")
	}
	if deps.Alerts == nil {
		deps.Alerts = alert.Log{Logger: deps.Logger}
	}
	if deps.Service == "" {
		deps.Service = "queue"
	}
	w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	acts := &Activities{Lifecycle: deps.Lifecycle, Deliverer: deps.Deliverer, Alerts: deps.Alerts}
	acts.Register(w)
	sweep := &Sweep{Seals: deps.Seals, Sessions: deps.Sessions, Logger: deps.Logger}
	if err := periodic.SetupSweep(ctx, temporal, w, deps.Service, sweep.Periodic()); err != nil {
		return nil, fmt.Errorf("install the stale-seal sweep: %w", err)
	}
	starter := &Starter{client: temporal, taskQueue: temporalx.TaskQueue(deps.Service), delay: deps.Delay}
	claims := &ClaimSweep{Claims: deps.Claims, Drains: starter, Logger: deps.Logger}
	if err := periodic.SetupSweep(ctx, temporal, w, deps.Service, claims.Periodic()); err != nil {
		return nil, fmt.Errorf("install the expired-claims sweep: %w", err)
	}
	return starter, nil
}

// WorkflowStarter is the Temporal client's SignalWithStartWorkflow.
type WorkflowStarter interface {
	SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
		options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error)
}

// Starter pokes sessions' drain workflows.
type Starter struct {
	client    WorkflowStarter
	taskQueue string
	delay     time.Duration
}

// Poke asks the session's drain workflow to deliver its queue, starting
// the workflow when none is running: the signal and the start are one
// call, so a poke is never lost between a workflow's last look and its
// end. Call it once a message is committed to the queue, and when
// lifecycle asks for a drain after a pause. A nil Starter (a service run
// without Temporal, as in component tests) pokes nothing.
func (s *Starter) Poke(ctx context.Context, sessionID int64) error {
	if s == nil {
		return nil
	}
	opts := client.StartWorkflowOptions{
		ID:        WorkflowID(sessionID),
		TaskQueue: s.taskQueue,
		// One drain per session at a time; a new one after the last ended.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Memo:                  map[string]any{"session_id": sessionID},
	}
	_, err := s.client.SignalWithStartWorkflow(ctx, WorkflowID(sessionID), SignalPoke, nil, opts,
		WorkflowName, Input{SessionID: sessionID, Delay: s.delay})
	if err != nil {
		return fmt.Errorf("poke session %d's queue drain: %w", sessionID, err)
	}
	return nil
}
