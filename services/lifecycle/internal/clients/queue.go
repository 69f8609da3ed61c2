package clients

import (
	"context"
	"fmt"
	"time"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
)

// Queue is the archive guard's side in the queue: its SealQueue and
// UnsealQueue (app.QueueSealer).
type Queue struct {
	Client queuev1.QueueServiceClient
	// Timeout bounds one call.
	Timeout time.Duration
}

var _ app.QueueSealer = Queue{}

// SealQueue implements app.QueueSealer.
func (q Queue) SealQueue(ctx context.Context, sessionID int64, attemptID string, force bool) (app.QueueSeal, error) {
	ctx, cancel := q.bound(ctx)
	defer cancel()
	resp, err := q.Client.SealQueue(ctx, &queuev1.SealQueueRequest{SessionId: sessionID, AttemptId: attemptID, Force: force})
	if err != nil {
		return app.QueueSeal{}, fmt.Errorf("seal session %d's queue: %w", sessionID, err)
	}
	return app.QueueSeal{Refusal: resp.GetRefusal(), RetirementClause: resp.GetRetirementClause()}, nil
}

// UnsealQueue implements app.QueueSealer.
func (q Queue) UnsealQueue(ctx context.Context, sessionID int64, attemptID string) error {
	ctx, cancel := q.bound(ctx)
	defer cancel()
	if _, err := q.Client.UnsealQueue(ctx, &queuev1.UnsealQueueRequest{SessionId: sessionID, AttemptId: attemptID}); err != nil {
		return fmt.Errorf("unseal session %d's queue: %w", sessionID, err)
	}
	return nil
}

func (q Queue) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if q.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, q.Timeout)
}
