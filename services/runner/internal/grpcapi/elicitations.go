package grpcapi

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// answerBound bounds one AnswerElicitation: the node taking the answer,
// writing it and hearing what the agent did with it, and Temporal's round
// trips.
const answerBound = time.Minute

// AnswerElicitation implements runnerv1.RunnerServiceServer. It sends the
// session's workflow the answer_elicitation update, which owns the turn
// and so knows the node running it: the update's activity runs on that
// node's task queue, where the agent process is. A refusal (the turn gone,
// the agent no longer waiting on it) is FailedPrecondition in the words of
// whoever refused; a workflow or node that does not answer is Unavailable.
func (s *Server) AnswerElicitation(ctx context.Context, req *runnerv1.AnswerElicitationRequest) (*runnerv1.AnswerElicitationResponse, error) {
	var vs validation.Violations
	if req.GetSessionId() <= 0 {
		vs.Add("session_id", "must be a session's numeric id")
	}
	if req.GetTurnId() == "" {
		vs.Add("turn_id", "is required: the turn whose agent asked")
	}
	if req.GetElicitationId() == "" {
		vs.Add("elicitation_id", "is required")
	}
	if err := vs.Err(); err != nil {
		return nil, toStatus(err)
	}
	if s.interrupts.Updater == nil {
		return nil, toStatus(refuse(codes.FailedPrecondition, "this runner runs no turns: no agent waits for an answer"))
	}
	ctx, cancel := context.WithTimeout(ctx, answerBound)
	defer cancel()
	update := workflow.AnswerElicitationRequest{TurnID: req.GetTurnId(), ID: req.GetElicitationId(), Action: req.GetAction()}
	if req.GetContent() != nil {
		update.Content = req.GetContent().AsMap()
	}
	h, err := s.interrupts.Updater.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflow.ID(req.GetSessionId()),
		UpdateName:   workflow.UpdateAnswerElicitation,
		Args:         []any{update},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var res workflow.AnswerElicitationResult
	if err == nil {
		err = h.Get(ctx, &res)
	}
	var (
		notFound *serviceerror.NotFound
		appErr   *temporal.ApplicationError
	)
	switch {
	case err == nil:
		return &runnerv1.AnswerElicitationResponse{Action: res.Action}, nil
	case errors.As(err, &notFound):
		return nil, toStatus(refuse(codes.FailedPrecondition,
			"session %d runs no turn: no agent waits for an answer; send the session a message instead", req.GetSessionId()))
	case errors.As(err, &appErr) && appErr.Type() == workflow.ErrElicitationNotPending:
		return nil, toStatus(refuse(codes.FailedPrecondition, "%s", appErr.Message()))
	}
	return nil, toStatus(refuse(codes.Unavailable, "hand session %d's agent the answer to elicitation %q: %v; retry shortly",
		req.GetSessionId(), req.GetElicitationId(), err))
}
