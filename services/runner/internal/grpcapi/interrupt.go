package grpcapi

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// TurnUpdater is the Temporal client's UpdateWorkflow.
type TurnUpdater interface {
	UpdateWorkflow(ctx context.Context, options client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error)
}

// Interrupts is what InterruptTurn needs: the Temporal client and how long
// an interrupt may take (the ladder's graces plus Temporal's round trips).
type Interrupts struct {
	Updater TurnUpdater
	Bound   time.Duration
}

// WithInterrupts serves InterruptTurn through i.
func (s *Server) WithInterrupts(i Interrupts) *Server {
	s.interrupts = i
	return s
}

// InterruptTurn implements runnerv1.RunnerServiceServer. It sends the
// session's workflow the interrupt_turn update and waits for its answer,
// which comes once the turn's process is gone (a Temporal update rather than
// a signal: the caller learns the outcome in the same call, recorded in the
// workflow's history, without polling). No workflow means no turn.
func (s *Server) InterruptTurn(ctx context.Context, req *runnerv1.InterruptTurnRequest) (*runnerv1.InterruptTurnResponse, error) {
	if req.GetSessionId() <= 0 {
		return nil, toStatus(validation.Invalid("session_id", "must be a session's numeric id"))
	}
	if s.interrupts.Updater == nil {
		// A runner without Temporal runs no turns: none is running.
		return &runnerv1.InterruptTurnResponse{}, nil
	}
	if s.interrupts.Bound > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.interrupts.Bound)
		defer cancel()
	}
	h, err := s.interrupts.Updater.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflow.ID(req.GetSessionId()),
		UpdateName:   workflow.UpdateInterruptTurn,
		Args:         []any{workflow.InterruptTurnRequest{Reason: req.GetReason(), TurnID: req.GetTurnId()}},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var res workflow.InterruptTurnResult
	if err == nil {
		err = h.Get(ctx, &res)
	}
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return &runnerv1.InterruptTurnResponse{}, nil
	case err != nil:
		return nil, toStatus(refuse(codes.Unavailable, "interrupt the turn of session %d: %v", req.GetSessionId(), err))
	}
	return &runnerv1.InterruptTurnResponse{Interrupted: res.Interrupted, TurnId: res.TurnID, Result: res.Result}, nil
}
