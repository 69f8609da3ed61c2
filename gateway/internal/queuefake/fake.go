// Package queuefake is a queue service for the gateway's tests: a grpcfake
// recorder. A call answers what the test set (Answer, Handle, FailWith),
// else the method's empty response; Message builds the messages a test
// answers with. The queue's own tests prove its rules (positions, the
// running session's queue, the archive's retirement).
package queuefake

import (
	"context"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zimmerhq/zimmer/gateway/internal/grpcfake"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
)

// Now is the timestamps of Message's messages.
var Now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// QueuedMessage is what the queue says when a follow-up waits in the
// queue, as a test answers it.
const QueuedMessage = "Message queued (session is running). It will be sent when the agent completes its current task."

// Message is message id of session, pending at position with content, as
// a caller queued it at Now.
func Message(id, session int64, position int32, content string) *queuev1.EnqueuedMessage {
	return &queuev1.EnqueuedMessage{
		Id: id, SessionId: session, Status: "pending", Origin: "caller", Position: position, Content: content,
		CreatedAt: timestamppb.New(Now), UpdatedAt: timestamppb.New(Now),
	}
}

// Sent is m as the queue answers it once delivered.
func Sent(m *queuev1.EnqueuedMessage) *queuev1.EnqueuedMessage {
	m.Status, m.Position, m.SentAt = "sent", 0, timestamppb.New(Now)
	return m
}

// Undelivered is m as an archive leaves it.
func Undelivered(m *queuev1.EnqueuedMessage) *queuev1.EnqueuedMessage {
	m.Status, m.Position, m.UndeliveredAt = "undelivered", 0, timestamppb.New(Now)
	m.UndeliveredReason = "the session was archived while the message was queued"
	return m
}

// Enqueues answers EnqueueMessage as the queue does a session's next
// message: pending, with the next id at the next position (one count for
// every session), carrying what the request said.
func Enqueues() grpcfake.Handler {
	var (
		mu sync.Mutex
		n  int64
	)
	return func(m proto.Message) (proto.Message, error) {
		mu.Lock()
		defer mu.Unlock()
		req := m.(*queuev1.EnqueueMessageRequest)
		n++
		session, _ := strconv.ParseInt(req.GetSessionId(), 10, 64)
		msg := Message(n, session, int32(n), req.GetContent())
		msg.Goal, msg.ActingSessionId, msg.IdempotencyKey = req.GetGoal(), req.GetActingSessionId(), req.GetIdempotencyKey()
		return &queuev1.EnqueueMessageResponse{EnqueuedMessage: msg, Created: true, Message: "queued"}, nil
	}
}

// Call is one call the fake received.
type Call = grpcfake.Call

// Server implements queuev1.QueueServiceServer as a recorder.
type Server struct {
	queuev1.UnimplementedQueueServiceServer
	*grpcfake.Recorder
}

// New returns a fake with no calls, answering empty responses.
func New() *Server { return &Server{Recorder: grpcfake.NewRecorder(nil)} }

// Register adds the fake to g.
func (s *Server) Register(g *grpc.Server) { queuev1.RegisterQueueServiceServer(g, s) }

// ListEnqueuedMessages implements queuev1.QueueServiceServer.
func (s *Server) ListEnqueuedMessages(ctx context.Context, req *queuev1.ListEnqueuedMessagesRequest) (*queuev1.ListEnqueuedMessagesResponse, error) {
	return grpcfake.Answer[*queuev1.ListEnqueuedMessagesResponse](ctx, s.Recorder, req)
}

// GetEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) GetEnqueuedMessage(ctx context.Context, req *queuev1.GetEnqueuedMessageRequest) (*queuev1.GetEnqueuedMessageResponse, error) {
	return grpcfake.Answer[*queuev1.GetEnqueuedMessageResponse](ctx, s.Recorder, req)
}

// EnqueueMessage implements queuev1.QueueServiceServer.
func (s *Server) EnqueueMessage(ctx context.Context, req *queuev1.EnqueueMessageRequest) (*queuev1.EnqueueMessageResponse, error) {
	return grpcfake.Answer[*queuev1.EnqueueMessageResponse](ctx, s.Recorder, req)
}

// UpdateEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) UpdateEnqueuedMessage(ctx context.Context, req *queuev1.UpdateEnqueuedMessageRequest) (*queuev1.UpdateEnqueuedMessageResponse, error) {
	return grpcfake.Answer[*queuev1.UpdateEnqueuedMessageResponse](ctx, s.Recorder, req)
}

// DeleteEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) DeleteEnqueuedMessage(ctx context.Context, req *queuev1.DeleteEnqueuedMessageRequest) (*queuev1.DeleteEnqueuedMessageResponse, error) {
	return grpcfake.Answer[*queuev1.DeleteEnqueuedMessageResponse](ctx, s.Recorder, req)
}

// SendEnqueuedMessageNow implements queuev1.QueueServiceServer.
func (s *Server) SendEnqueuedMessageNow(ctx context.Context, req *queuev1.SendEnqueuedMessageNowRequest) (*queuev1.SendEnqueuedMessageNowResponse, error) {
	return grpcfake.Answer[*queuev1.SendEnqueuedMessageNowResponse](ctx, s.Recorder, req)
}

// InterruptWithEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) InterruptWithEnqueuedMessage(ctx context.Context, req *queuev1.InterruptWithEnqueuedMessageRequest) (*queuev1.InterruptWithEnqueuedMessageResponse, error) {
	return grpcfake.Answer[*queuev1.InterruptWithEnqueuedMessageResponse](ctx, s.Recorder, req)
}

// FollowUp implements queuev1.QueueServiceServer.
func (s *Server) FollowUp(ctx context.Context, req *queuev1.FollowUpRequest) (*queuev1.FollowUpResponse, error) {
	return grpcfake.Answer[*queuev1.FollowUpResponse](ctx, s.Recorder, req)
}

// DeliverNextMessage implements queuev1.QueueServiceServer.
func (s *Server) DeliverNextMessage(ctx context.Context, req *queuev1.DeliverNextMessageRequest) (*queuev1.DeliverNextMessageResponse, error) {
	return grpcfake.Answer[*queuev1.DeliverNextMessageResponse](ctx, s.Recorder, req)
}

// SealQueue implements queuev1.QueueServiceServer.
func (s *Server) SealQueue(ctx context.Context, req *queuev1.SealQueueRequest) (*queuev1.SealQueueResponse, error) {
	return grpcfake.Answer[*queuev1.SealQueueResponse](ctx, s.Recorder, req)
}

// UnsealQueue implements queuev1.QueueServiceServer.
func (s *Server) UnsealQueue(ctx context.Context, req *queuev1.UnsealQueueRequest) (*queuev1.UnsealQueueResponse, error) {
	return grpcfake.Answer[*queuev1.UnsealQueueResponse](ctx, s.Recorder, req)
}

// CountPendingMessages implements queuev1.QueueServiceServer.
func (s *Server) CountPendingMessages(ctx context.Context, req *queuev1.CountPendingMessagesRequest) (*queuev1.CountPendingMessagesResponse, error) {
	return grpcfake.Answer[*queuev1.CountPendingMessagesResponse](ctx, s.Recorder, req)
}

// QueueNotice implements queuev1.QueueServiceServer.
func (s *Server) QueueNotice(ctx context.Context, req *queuev1.QueueNoticeRequest) (*queuev1.QueueNoticeResponse, error) {
	return grpcfake.Answer[*queuev1.QueueNoticeResponse](ctx, s.Recorder, req)
}
