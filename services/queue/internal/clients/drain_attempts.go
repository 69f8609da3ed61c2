package clients

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/queue/internal/drain"
)

// DrainLifecycle is lifecycle as the queue's drain and stale-seal sweep
// see it: drain attempts counted (RecordDrainAttempt) and sessions'
// statuses read (GetSession), as the queue service.
type DrainLifecycle struct {
	client lifecyclev1.LifecycleServiceClient
}

var (
	_ drain.Lifecycle = (*DrainLifecycle)(nil)
	_ drain.Sessions  = (*DrainLifecycle)(nil)
)

// NewDrainLifecycle returns the adapter over a connection to lifecycle.
func NewDrainLifecycle(conn grpc.ClientConnInterface) *DrainLifecycle {
	return &DrainLifecycle{client: lifecyclev1.NewLifecycleServiceClient(conn)}
}

// RecordDrainAttempt implements drain.Lifecycle. A refusal is named by its
// enum value, lowercased without its prefix (DELIVERY_REFUSAL_MCP_RETRY is
// "mcp_retry"), so one this build does not know still reads as a refusal.
func (l *DrainLifecycle) RecordDrainAttempt(ctx context.Context, sessionID int64) (drain.Attempt, error) {
	resp, err := l.client.RecordDrainAttempt(ctx, &lifecyclev1.RecordDrainAttemptRequest{SessionId: sessionID})
	if st, ok := status.FromError(err); ok && st.Code() == codes.NotFound {
		// Not a failed attempt: the session is gone for good.
		return drain.Attempt{Gone: true, Message: st.Message()}, nil
	}
	if err != nil {
		return drain.Attempt{}, fmt.Errorf("lifecycle RecordDrainAttempt for session %d: %w", sessionID, err)
	}
	if r := resp.GetRefusal(); r != lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED {
		return drain.Attempt{Refusal: refusalName(r), Message: resp.GetMessage()}, nil
	}
	return drain.Attempt{Counted: true, Attempts: int(resp.GetAttempts())}, nil
}

func refusalName(r lifecyclev1.DeliveryRefusal) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "DELIVERY_REFUSAL_"))
}

// Status implements drain.Sessions.
func (l *DrainLifecycle) Status(ctx context.Context, sessionID int64) (string, error) {
	resp, err := l.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: strconv.FormatInt(sessionID, 10)})
	if status.Code(err) == codes.NotFound {
		return "", fmt.Errorf("session %d: %w", sessionID, drain.ErrSessionNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("lifecycle GetSession %d: %w", sessionID, err)
	}
	return resp.GetSession().GetStatus(), nil
}
