// Package clients holds the notification service's adapters to other
// Zimmer services.
package clients

import (
	"context"
	"fmt"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/wire"
)

// Lifecycle reads sessions through lifecycle's GetSession, called as the
// notification service (the connection's identity).
type Lifecycle struct {
	client lifecyclev1.LifecycleServiceClient
}

var _ app.Sessions = (*Lifecycle)(nil)

// NewLifecycle returns the adapter over conn.
func NewLifecycle(conn grpc.ClientConnInterface) *Lifecycle {
	return &Lifecycle{client: lifecyclev1.NewLifecycleServiceClient(conn)}
}

// Get implements app.Sessions: NotFound is domain.ErrSessionGone; any other
// error is kept for the caller to retry.
func (l *Lifecycle) Get(ctx context.Context, id int64) (domain.Session, error) {
	resp, err := l.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: strconv.FormatInt(id, 10)})
	if status.Code(err) == codes.NotFound {
		return domain.Session{}, fmt.Errorf("session %d: %w", id, domain.ErrSessionGone)
	}
	if err != nil {
		return domain.Session{}, fmt.Errorf("lifecycle GetSession %d: %w", id, err)
	}
	s := resp.GetSession()
	return wire.Session(s), nil
}
