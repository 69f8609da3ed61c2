package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/zimmerhq/zimmer/services/platform/tracing"
)

// WorkflowStarter is the Temporal client's ExecuteWorkflow.
type WorkflowStarter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// StartOnce starts workflow name as id on the shared task queue unless a
// run of id is going, when started is false: that run serves the caller
// too (it reads what it acts on when it runs). An ended run's id is
// reused, so each effect (an archive, a pause) is a run of its own. The
// effects' workflows — a clone's clean-up and restore, an inference, a
// status summary and its harvest — all start this way.
func StartOnce(ctx context.Context, s WorkflowStarter, id, name string, arg any) (started bool, err error) {
	_, err = s.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, name, arg)
	var running *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &running):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("start workflow %s: %w", id, err)
	}
	return true, nil
}

// TurnStarter is the Temporal client's SignalWithStartWorkflow.
type TurnStarter interface {
	SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
		options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error)
}

// Starter hands turn requests to sessions' workflows, starting a workflow
// that is not running: the signal and the start are one call, so no request
// falls between them. The runner's event consumer and its orphan sweep both
// send through it, so every session's workflow starts the same way.
type Starter struct {
	Client TurnStarter
	// Node is this runner node, named in the memo of the workflows it
	// starts; the node that makes a session's clone holds its turns.
	Node string
	// SearchAttributes: the namespace has the session workflows' search
	// attributes.
	SearchAttributes bool
	// NodeDeadAfter is how long a lost turn's node may stay silent before
	// it is declared dead (0: DefaultNodeDeadAfter).
	NodeDeadAfter time.Duration
}

// Send signals req to its session's workflow, starting it if needed.
// runtime names the session's runtime in the workflow's memo.
func (s Starter) Send(ctx context.Context, req TurnRequest) error {
	opts := client.StartWorkflowOptions{
		ID:        ID(req.Session.ID),
		TaskQueue: TaskQueue,
		// A session's workflow runs until someone ends it; a new one may
		// start after that (terminated by an operator, say).
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Memo: map[string]any{
			"session_id": req.Session.ID, "runtime": req.Session.Runtime, "started_by_node": s.Node,
		},
	}
	if s.SearchAttributes {
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(
			SearchSessionID.ValueSet(req.Session.ID), SearchRuntime.ValueSet(req.Session.Runtime))
	}
	req.TraceParent, req.TraceState = tracing.Inject(ctx)
	st := State{Session: req.Session, SearchAttributes: s.SearchAttributes, NodeDeadAfter: s.NodeDeadAfter}
	if _, err := s.Client.SignalWithStartWorkflow(ctx, ID(req.Session.ID), SignalTurn, req, opts, WorkflowName, st); err != nil {
		return fmt.Errorf("signal-with-start the workflow of session %d: %w", req.Session.ID, err)
	}
	return nil
}
