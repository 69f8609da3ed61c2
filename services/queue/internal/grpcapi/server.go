// Package grpcapi serves zimmer.queue.v1.QueueService: the enqueued
// messages of a session (list, enqueue, edit or reorder, delete), over the
// use cases in app.
package grpcapi

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
	"github.com/zimmerhq/zimmer/services/queue/internal/app"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// Server implements queuev1.QueueServiceServer.
type Server struct {
	queuev1.UnimplementedQueueServiceServer
	queue  app.Queue
	logger *slog.Logger
}

var _ queuev1.QueueServiceServer = (*Server)(nil)

// NewServer returns the queue API over the use cases.
func NewServer(queue app.Queue, logger *slog.Logger) *Server {
	return &Server{queue: queue, logger: logger}
}

// Register adds the service to g.
func (s *Server) Register(g *grpc.Server) { queuev1.RegisterQueueServiceServer(g, s) }

// ListEnqueuedMessages implements queuev1.QueueServiceServer.
func (s *Server) ListEnqueuedMessages(ctx context.Context, req *queuev1.ListEnqueuedMessagesRequest) (*queuev1.ListEnqueuedMessagesResponse, error) {
	page, err := s.queue.List.Handle(ctx, req.GetSessionId(), domain.ListRequest{
		Statuses: req.GetStatus(), Page: int(req.GetPage()), PerPage: int(req.GetPerPage()),
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &queuev1.ListEnqueuedMessagesResponse{
		EnqueuedMessages: make([]*queuev1.EnqueuedMessage, 0, len(page.Messages)),
		Pagination: &queuev1.Pagination{
			Page: int32(page.Page), PerPage: int32(page.PerPage), //nolint:gosec // bounded by rules.MaxPerPage and the request's int32
			TotalCount: page.TotalCount, TotalPages: int32(page.TotalPages()), //nolint:gosec // a queue's pages
		},
	}
	for _, m := range page.Messages {
		out.EnqueuedMessages = append(out.EnqueuedMessages, toProto(m))
	}
	return out, nil
}

// CountPendingMessages implements queuev1.QueueServiceServer: internal,
// the console's dashboard cards.
func (s *Server) CountPendingMessages(ctx context.Context, req *queuev1.CountPendingMessagesRequest) (*queuev1.CountPendingMessagesResponse, error) {
	counts, err := s.queue.CountPending.Handle(ctx, req.GetSessionIds())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &queuev1.CountPendingMessagesResponse{Pending: counts}, nil
}

// GetEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) GetEnqueuedMessage(ctx context.Context, req *queuev1.GetEnqueuedMessageRequest) (*queuev1.GetEnqueuedMessageResponse, error) {
	m, err := s.queue.Get.Handle(ctx, req.GetSessionId(), req.GetMessageId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &queuev1.GetEnqueuedMessageResponse{EnqueuedMessage: toProto(m)}, nil
}

// EnqueueMessage implements queuev1.QueueServiceServer.
func (s *Server) EnqueueMessage(ctx context.Context, req *queuev1.EnqueueMessageRequest) (*queuev1.EnqueueMessageResponse, error) {
	m, created, err := s.queue.Enqueue.Handle(ctx, app.Enqueue{
		SessionRef: req.GetSessionId(), Content: req.GetContent(), Goal: req.GetGoal(),
		ActingSessionID: req.GetActingSessionId(), IdempotencyKey: req.GetIdempotencyKey(),
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	msg := domain.Enqueued(m)
	if !created {
		msg = domain.AlreadyEnqueued(m)
	}
	return &queuev1.EnqueueMessageResponse{EnqueuedMessage: toProto(m), Created: created, Message: msg}, nil
}

// UpdateEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) UpdateEnqueuedMessage(ctx context.Context, req *queuev1.UpdateEnqueuedMessageRequest) (*queuev1.UpdateEnqueuedMessageResponse, error) {
	m, err := s.queue.Update.Handle(ctx, req.GetSessionId(), req.GetMessageId(),
		domain.Edit{Content: req.Content, Goal: req.Goal}, int(req.GetPosition()))
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &queuev1.UpdateEnqueuedMessageResponse{EnqueuedMessage: toProto(m)}, nil
}

// DeleteEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) DeleteEnqueuedMessage(ctx context.Context, req *queuev1.DeleteEnqueuedMessageRequest) (*queuev1.DeleteEnqueuedMessageResponse, error) {
	if err := s.queue.Delete.Handle(ctx, req.GetSessionId(), req.GetMessageId()); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &queuev1.DeleteEnqueuedMessageResponse{}, nil
}

// errUnavailable: this queue cannot do what was asked now; retry.
var errUnavailable = errors.New("unavailable")

// toStatus maps err to the status its caller acts on; anything unmapped
// is logged and answered Internal.
func (s *Server) toStatus(ctx context.Context, err error) error {
	if st, ok := grpcstatus.Common(err); ok {
		return st
	}
	var never *domain.UndeliverableError
	switch {
	case errors.As(err, &never):
		return status.Error(codes.FailedPrecondition, never.Error())
	case errors.Is(err, app.ErrSessionNotFound), errors.Is(err, domain.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, app.ErrForbidden):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, app.ErrClosed), errors.Is(err, domain.ErrSealed), errors.Is(err, domain.ErrNotPending):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, app.ErrRefused), errors.Is(err, app.ErrUncleRefused):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, domain.ErrArchiveInProgress):
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, errUnavailable), errors.Is(err, app.ErrNoRunner):
		return status.Error(codes.Unavailable, err.Error())
	case status.Code(err) == codes.Unavailable:
		return status.Error(codes.Unavailable, "a service the queue depends on (lifecycle, runner or lineage) is unavailable; retry shortly")
	}
	s.logger.ErrorContext(ctx, "queue call failed", "error", err)
	return status.Error(codes.Internal, "internal error; retry, and report it if it persists")
}

func toProto(m domain.Message) *queuev1.EnqueuedMessage {
	out := &queuev1.EnqueuedMessage{
		Id: m.ID, SessionId: m.SessionID, Status: string(m.Status), Origin: string(m.Origin),
		ActingSessionId: m.ActingSessionID, Content: m.Content, Goal: m.Goal, IdempotencyKey: m.IdempotencyKey,
		CreatedAt: stamp(m.CreatedAt), UpdatedAt: stamp(m.UpdatedAt), SentAt: stamp(m.SentAt), UndeliveredAt: stamp(m.UndeliveredAt),
		UndeliveredReason: m.UndeliveredReason,
	}
	if m.Live() {
		out.Position = int32(m.Position)
	}
	return out
}

func stamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
