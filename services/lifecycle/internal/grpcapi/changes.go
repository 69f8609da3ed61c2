package grpcapi

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// WithSessionChanges serves WatchSessionChanges over uc.
func (s *Server) WithSessionChanges(uc app.WatchSessionChanges) *Server {
	s.sessionChanges = uc
	return s
}

// WatchSessionChanges implements lifecyclev1.LifecycleServiceServer:
// internal, the console's live dashboard. A send blocks while the watcher
// reads slowly (gRPC's flow control), so a slow watcher holds at most one
// page of the feed here (app.WatchPageSize).
func (s *Server) WatchSessionChanges(req *lifecyclev1.WatchSessionChangesRequest, stream grpc.ServerStreamingServer[lifecyclev1.WatchSessionChangesResponse]) error {
	ctx := stream.Context()
	err := s.sessionChanges.Handle(ctx, req.AfterEventId, func(position int64, c *domain.SessionChange) error {
		msg := &lifecyclev1.WatchSessionChangesResponse{Position: position}
		if c != nil {
			msg.Change = &lifecyclev1.SessionChange{
				EventId: c.EventID, SessionId: c.SessionID, From: c.From, To: c.To,
				Events: c.Events, OccurredAt: timestamppb.New(c.OccurredAt),
			}
		}
		return stream.Send(msg)
	})
	if err != nil && (!errors.Is(err, context.Canceled) || ctx.Err() == nil) {
		return s.toStatus(ctx, err)
	}
	return nil // ended by the service stopping, or the watcher went away
}
