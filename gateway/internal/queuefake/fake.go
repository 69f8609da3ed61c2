// Package queuefake is a queue service for the gateway's tests: it records
// every call and keeps each session's queue in memory, positions 1..n, so
// REST and MCP can be driven end to end against it. A session ref is taken
// as given (no slug resolution, nothing archived); the queue's own tests
// prove the real rules.
package queuefake

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// Now is every message's timestamps.
var Now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Call is one call the fake received.
type Call struct {
	Method    string
	Request   proto.Message
	Principal principal.Principal // the principal the gateway forwarded
}

// Server implements queuev1.QueueServiceServer.
type Server struct {
	queuev1.UnimplementedQueueServiceServer

	mu     sync.Mutex
	calls  []Call
	queues map[string][]*queuev1.EnqueuedMessage
	nextID int64
}

// New returns an empty fake.
func New() *Server { return &Server{queues: map[string][]*queuev1.EnqueuedMessage{}} }

// Register adds the fake to g.
func (s *Server) Register(g *grpc.Server) { queuev1.RegisterQueueServiceServer(g, s) }

// Calls are the calls received so far, oldest first; with methods, only
// the calls of those.
func (s *Server) Calls(methods ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if len(methods) == 0 || slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// record notes the call; the caller holds nothing, and gets mu held.
func (s *Server) record(ctx context.Context, method string, req proto.Message) {
	p, _ := principal.FromContext(ctx)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Request: proto.Clone(req), Principal: p})
}

func (s *Server) renumber(ref string) {
	for i, m := range s.queues[ref] {
		m.Position = int32(i + 1)
	}
}

func (s *Server) find(ref string, id int64) (int, error) {
	i := slices.IndexFunc(s.queues[ref], func(m *queuev1.EnqueuedMessage) bool { return m.GetId() == id })
	if i < 0 {
		return 0, status.Error(codes.NotFound, "no such enqueued message")
	}
	return i, nil
}

// ListEnqueuedMessages implements queuev1.QueueServiceServer.
func (s *Server) ListEnqueuedMessages(ctx context.Context, req *queuev1.ListEnqueuedMessagesRequest) (*queuev1.ListEnqueuedMessagesResponse, error) {
	s.record(ctx, "ListEnqueuedMessages", req)
	defer s.mu.Unlock()
	out := &queuev1.ListEnqueuedMessagesResponse{EnqueuedMessages: []*queuev1.EnqueuedMessage{}}
	for _, m := range s.queues[req.GetSessionId()] {
		out.EnqueuedMessages = append(out.EnqueuedMessages, proto.Clone(m).(*queuev1.EnqueuedMessage))
	}
	return out, nil
}

// EnqueueMessage implements queuev1.QueueServiceServer.
func (s *Server) EnqueueMessage(ctx context.Context, req *queuev1.EnqueueMessageRequest) (*queuev1.EnqueueMessageResponse, error) {
	s.record(ctx, "EnqueueMessage", req)
	defer s.mu.Unlock()
	if req.GetContent() == "" {
		return nil, status.Error(codes.InvalidArgument, "content: is required")
	}
	id, _ := strconv.ParseInt(req.GetSessionId(), 10, 64)
	s.nextID++
	m := &queuev1.EnqueuedMessage{
		Id: s.nextID, SessionId: id, Status: "pending", Origin: "caller", ActingSessionId: req.GetActingSessionId(),
		Content: req.GetContent(), Goal: req.GetGoal(), IdempotencyKey: req.GetIdempotencyKey(),
		CreatedAt: timestamppb.New(Now), UpdatedAt: timestamppb.New(Now),
	}
	s.queues[req.GetSessionId()] = append(s.queues[req.GetSessionId()], m)
	s.renumber(req.GetSessionId())
	return &queuev1.EnqueueMessageResponse{EnqueuedMessage: proto.Clone(m).(*queuev1.EnqueuedMessage), Created: true, Message: "queued"}, nil
}

// UpdateEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) UpdateEnqueuedMessage(ctx context.Context, req *queuev1.UpdateEnqueuedMessageRequest) (*queuev1.UpdateEnqueuedMessageResponse, error) {
	s.record(ctx, "UpdateEnqueuedMessage", req)
	defer s.mu.Unlock()
	ref := req.GetSessionId()
	i, err := s.find(ref, req.GetMessageId())
	if err != nil {
		return nil, err
	}
	m := s.queues[ref][i]
	if req.Content != nil {
		m.Content = req.GetContent()
	}
	if req.Goal != nil {
		m.Goal = req.GetGoal()
	}
	if p := int(req.GetPosition()); p != 0 {
		if p < 1 || p > len(s.queues[ref]) {
			return nil, status.Errorf(codes.InvalidArgument, "position: must be between 1 and %d, the queue's length", len(s.queues[ref]))
		}
		q := slices.Delete(s.queues[ref], i, i+1)
		s.queues[ref] = slices.Insert(q, p-1, m)
		s.renumber(ref)
	}
	return &queuev1.UpdateEnqueuedMessageResponse{EnqueuedMessage: proto.Clone(m).(*queuev1.EnqueuedMessage)}, nil
}

// DeleteEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) DeleteEnqueuedMessage(ctx context.Context, req *queuev1.DeleteEnqueuedMessageRequest) (*queuev1.DeleteEnqueuedMessageResponse, error) {
	s.record(ctx, "DeleteEnqueuedMessage", req)
	defer s.mu.Unlock()
	i, err := s.find(req.GetSessionId(), req.GetMessageId())
	if err != nil {
		return nil, err
	}
	s.queues[req.GetSessionId()] = slices.Delete(s.queues[req.GetSessionId()], i, i+1)
	s.renumber(req.GetSessionId())
	return &queuev1.DeleteEnqueuedMessageResponse{}, nil
}
