package clients

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// Queue calls the queue service as the runner (the connection carries the
// internal token): DeliverNextMessage is internal.
type Queue struct {
	client queuev1.QueueServiceClient
}

var _ workflow.Queue = (*Queue)(nil)

// NewQueue returns the client over conn.
func NewQueue(conn grpc.ClientConnInterface) *Queue {
	return &Queue{client: queuev1.NewQueueServiceClient(conn)}
}

// permanent are the codes a retried DeliverNextMessage would get again: the
// caller is misconfigured (its token, a queue without the method) or the
// request can never be served. Anything else (the queue down, a deadline,
// an internal error) is worth asking again.
var permanent = map[codes.Code]bool{
	codes.InvalidArgument: true, codes.NotFound: true, codes.FailedPrecondition: true,
	codes.PermissionDenied: true, codes.Unauthenticated: true, codes.Unimplemented: true,
}

// DeliverNextMessage implements workflow.Queue.
func (q *Queue) DeliverNextMessage(ctx context.Context, sessionID int64, fromJobID string) (workflow.HandOver, error) {
	resp, err := q.client.DeliverNextMessage(ctx, &queuev1.DeliverNextMessageRequest{SessionId: sessionID, FromJobId: fromJobID})
	switch {
	case permanent[status.Code(err)]:
		return workflow.HandOver{}, &workflow.DrainRefusedError{Message: fmt.Sprintf("DeliverNextMessage of session %d after %s: %s",
			sessionID, fromJobID, err)}
	case err != nil:
		return workflow.HandOver{}, fmt.Errorf("queue DeliverNextMessage of session %d after %s: %w", sessionID, fromJobID, err)
	case !resp.GetDelivered():
		return workflow.HandOver{}, nil
	case resp.GetJobId() == "":
		// The turn could not run under the session's running job; asking
		// again gets the same answer.
		return workflow.HandOver{}, &workflow.DrainRefusedError{Message: fmt.Sprintf(
			"DeliverNextMessage of session %d after %s answered delivered without a job id", sessionID, fromJobID)}
	}
	return workflow.HandOver{Delivered: true, JobID: resp.GetJobId(), Prompt: resp.GetPrompt()}, nil
}
