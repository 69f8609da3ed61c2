package clients

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"google.golang.org/protobuf/types/known/structpb"

	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// Runner halts turns through the runner's InterruptTurn (app.TurnInterrupter).
type Runner struct {
	Client runnerv1.RunnerServiceClient
	// Timeout bounds one call: the ladder's graces and the round trips.
	Timeout time.Duration
}

// InterruptTurn implements app.TurnInterrupter.
func (r Runner) InterruptTurn(ctx context.Context, sessionID int64, reason string) error {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	if _, err := r.Client.InterruptTurn(ctx, &runnerv1.InterruptTurnRequest{SessionId: sessionID, Reason: reason}); err != nil {
		return fmt.Errorf("interrupt session %d's turn: %w", sessionID, err)
	}
	return nil
}

// SearchTranscripts implements app.TranscriptSearcher through the runner's
// SearchTranscripts. A runner that does not answer is ErrUnavailable, so
// the caller is told to retry rather than shown an empty list.
func (r Runner) SearchTranscripts(ctx context.Context, words string, limit int) ([]int64, error) {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	resp, err := r.Client.SearchTranscripts(ctx, &runnerv1.SearchTranscriptsRequest{Query: words, Limit: int32(limit)})
	switch status.Code(err) {
	case codes.OK:
		return resp.GetSessionIds(), nil
	case codes.InvalidArgument:
		return nil, validation.Invalid("transcript", "%s", status.Convert(err).Message())
	default:
		return nil, fmt.Errorf("the runner did not search the transcripts; retry shortly: %w (%v)", domain.ErrUnavailable, status.Convert(err).Message())
	}
}

// CloneState implements app.CloneKeeper through the runner's GetClone: ""
// when the runner made no clone for the session.
func (r Runner) CloneState(ctx context.Context, sessionID int64) (string, error) {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	resp, err := r.Client.GetClone(ctx, &runnerv1.GetCloneRequest{SessionId: strconv.FormatInt(sessionID, 10)})
	if status.Code(err) == codes.NotFound {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read session %d's clone: %w", sessionID, err)
	}
	return resp.GetClone().GetState(), nil
}

// AnswerElicitation implements app.ElicitationAnswerer through the
// runner's AnswerElicitation: the runner's refusal (FailedPrecondition: the
// turn gone, the agent not waiting on it) comes back as it is, for the
// caller to pass on.
func (r Runner) AnswerElicitation(ctx context.Context, sessionID int64, e domain.Elicitation, answer domain.ElicitationAnswer) (string, error) {
	req := &runnerv1.AnswerElicitationRequest{SessionId: sessionID, TurnId: e.TurnID, ElicitationId: e.ID, Action: answer.Action}
	if answer.Content != nil {
		content, err := structpb.NewStruct(answer.Content)
		if err != nil {
			return "", fmt.Errorf("encode the answer to elicitation %q: %w", e.ID, err)
		}
		req.Content = content
	}
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	resp, err := r.Client.AnswerElicitation(ctx, req)
	switch status.Code(err) {
	case codes.OK:
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return "", fmt.Errorf("the runner did not hand session %d's agent the answer to elicitation %q; retry shortly: %w (%v)",
			sessionID, e.ID, domain.ErrUnavailable, status.Convert(err).Message())
	default:
		return "", fmt.Errorf("hand session %d's agent the answer to elicitation %q: %w", sessionID, e.ID, err)
	}
	return resp.GetAction(), nil
}
