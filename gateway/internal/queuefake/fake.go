// Package queuefake is a queue service for the gateway's tests: it records
// every call and keeps each session's queue in memory, positions 1..n, so
// REST and MCP can be driven end to end against it. A session ref is taken
// as given (no slug resolution); a session is idle unless a test says it
// runs (SetRunning), and nothing is archived unless a test retires its
// queue (Retire). The internal methods (the runner's hand-over, the archive
// seal) are recorded and answered empty: no gateway surface calls them. The
// queue's own tests prove the real rules.
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
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// Now is every message's timestamps.
var Now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Call is one call the fake received.
type Call struct {
	Method    string
	Request   proto.Message
	Principal principal.Principal // the principal the gateway forwarded
	Surface   string              // the surface the gateway declared (platform/surface)
}

// Server implements queuev1.QueueServiceServer.
type Server struct {
	queuev1.UnimplementedQueueServiceServer

	mu    sync.Mutex
	calls []Call
	// queues are the pending messages, by session ref, in position order;
	// done the sent and undelivered ones, in the order they left.
	queues  map[string][]*queuev1.EnqueuedMessage
	done    map[string][]*queuev1.EnqueuedMessage
	running map[string]bool
	fail    error
	nextID  int64
	nextJob int
}

// New returns an empty fake.
func New() *Server {
	return &Server{
		queues: map[string][]*queuev1.EnqueuedMessage{}, done: map[string][]*queuev1.EnqueuedMessage{}, running: map[string]bool{},
	}
}

// QueuedMessage is what FollowUp answers when it queues, as the queue words
// it.
const QueuedMessage = "Message queued (session is running). It will be sent when the agent completes its current task."

// SetRunning says whether the session ref is running a turn: a running
// session queues follow-ups and moves a message sent now to the front; an
// idle one takes them as its turn.
func (s *Server) SetRunning(ref string, running bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running[ref] = running
}

// Retire does to ref's queue what an archive does: every pending message
// becomes undelivered.
func (s *Server) Retire(ref string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.queues[ref] {
		s.leave(ref, m, "undelivered")
	}
	s.queues[ref] = nil
}

// FailWith makes every later call fail with err (nil: answer again).
func (s *Server) FailWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

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

// record notes the call and returns FailWith's error; the caller holds
// nothing, and gets mu held.
func (s *Server) record(ctx context.Context, method string, req proto.Message) error {
	p, _ := principal.FromContext(ctx)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Request: proto.Clone(req), Principal: p, Surface: surface.Incoming(ctx)})
	return s.fail
}

// leave marks m sent or undelivered and keeps it among ref's done
// messages; the caller removes it from the queue.
func (s *Server) leave(ref string, m *queuev1.EnqueuedMessage, status string) {
	m.Status, m.Position = status, 0
	if status == "sent" {
		m.SentAt = timestamppb.New(Now)
	} else {
		m.UndeliveredAt = timestamppb.New(Now)
		m.UndeliveredReason = "the session was archived while the message was queued"
	}
	s.done[ref] = append(s.done[ref], m)
}

func (s *Server) enqueue(ref string, actingSessionID int64, content, goal, key string) *queuev1.EnqueuedMessage {
	id, _ := strconv.ParseInt(ref, 10, 64)
	s.nextID++
	m := &queuev1.EnqueuedMessage{
		Id: s.nextID, SessionId: id, Status: "pending", Origin: "caller", ActingSessionId: actingSessionID,
		Content: content, Goal: goal, IdempotencyKey: key,
		CreatedAt: timestamppb.New(Now), UpdatedAt: timestamppb.New(Now),
	}
	s.queues[ref] = append(s.queues[ref], m)
	s.renumber(ref)
	return m
}

func (s *Server) job() string {
	s.nextJob++
	return "job-" + strconv.Itoa(s.nextJob)
}

func clone(m *queuev1.EnqueuedMessage) *queuev1.EnqueuedMessage {
	return proto.Clone(m).(*queuev1.EnqueuedMessage)
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
	err := s.record(ctx, "ListEnqueuedMessages", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := &queuev1.ListEnqueuedMessagesResponse{EnqueuedMessages: []*queuev1.EnqueuedMessage{}}
	for _, m := range append(slices.Clone(s.queues[req.GetSessionId()]), s.done[req.GetSessionId()]...) {
		if len(req.GetStatus()) == 0 || slices.Contains(req.GetStatus(), m.GetStatus()) {
			out.EnqueuedMessages = append(out.EnqueuedMessages, clone(m))
		}
	}
	// One page holds everything: the fake pages nothing.
	n := len(out.EnqueuedMessages)
	out.Pagination = &queuev1.Pagination{Page: 1, PerPage: max(req.GetPerPage(), int32(n)), TotalCount: int64(n), TotalPages: 1}
	return out, nil
}

// GetEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) GetEnqueuedMessage(ctx context.Context, req *queuev1.GetEnqueuedMessageRequest) (*queuev1.GetEnqueuedMessageResponse, error) {
	err := s.record(ctx, "GetEnqueuedMessage", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for _, m := range append(slices.Clone(s.queues[req.GetSessionId()]), s.done[req.GetSessionId()]...) {
		if m.GetId() == req.GetMessageId() {
			return &queuev1.GetEnqueuedMessageResponse{EnqueuedMessage: clone(m)}, nil
		}
	}
	return nil, status.Error(codes.NotFound, "no such enqueued message")
}

// EnqueueMessage implements queuev1.QueueServiceServer.
func (s *Server) EnqueueMessage(ctx context.Context, req *queuev1.EnqueueMessageRequest) (*queuev1.EnqueueMessageResponse, error) {
	err := s.record(ctx, "EnqueueMessage", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if req.GetContent() == "" {
		return nil, status.Error(codes.InvalidArgument, "content: is required")
	}
	m := s.enqueue(req.GetSessionId(), req.GetActingSessionId(), req.GetContent(), req.GetGoal(), req.GetIdempotencyKey())
	return &queuev1.EnqueueMessageResponse{EnqueuedMessage: clone(m), Created: true, Message: "queued"}, nil
}

// UpdateEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) UpdateEnqueuedMessage(ctx context.Context, req *queuev1.UpdateEnqueuedMessageRequest) (*queuev1.UpdateEnqueuedMessageResponse, error) {
	err := s.record(ctx, "UpdateEnqueuedMessage", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
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
	return &queuev1.UpdateEnqueuedMessageResponse{EnqueuedMessage: clone(m)}, nil
}

// DeleteEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) DeleteEnqueuedMessage(ctx context.Context, req *queuev1.DeleteEnqueuedMessageRequest) (*queuev1.DeleteEnqueuedMessageResponse, error) {
	err := s.record(ctx, "DeleteEnqueuedMessage", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	i, err := s.find(req.GetSessionId(), req.GetMessageId())
	if err != nil {
		return nil, err
	}
	s.queues[req.GetSessionId()] = slices.Delete(s.queues[req.GetSessionId()], i, i+1)
	s.renumber(req.GetSessionId())
	return &queuev1.DeleteEnqueuedMessageResponse{}, nil
}

// FollowUp implements queuev1.QueueServiceServer: an idle session takes the
// prompt as its turn now, a running one queues it unless force_immediate.
func (s *Server) FollowUp(ctx context.Context, req *queuev1.FollowUpRequest) (*queuev1.FollowUpResponse, error) {
	err := s.record(ctx, "FollowUp", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if req.GetPrompt() == "" {
		return nil, status.Error(codes.InvalidArgument, "prompt: is required")
	}
	ref := req.GetSessionId()
	if s.running[ref] && !req.GetForceImmediate() {
		m := s.enqueue(ref, req.GetActingSessionId(), req.GetPrompt(), req.GetGoal(), req.GetIdempotencyKey())
		return &queuev1.FollowUpResponse{Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, Message: QueuedMessage, EnqueuedMessage: clone(m)}, nil
	}
	job := s.job()
	return &queuev1.FollowUpResponse{
		Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, JobId: job,
		Message: "Session " + ref + " runs the follow-up as its turn " + job + ".",
	}, nil
}

// SendEnqueuedMessageNow implements queuev1.QueueServiceServer: an idle
// session takes the message now; a running one gets it at the front.
func (s *Server) SendEnqueuedMessageNow(ctx context.Context, req *queuev1.SendEnqueuedMessageNowRequest) (*queuev1.SendEnqueuedMessageNowResponse, error) {
	err := s.record(ctx, "SendEnqueuedMessageNow", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ref := req.GetSessionId()
	i, err := s.find(ref, req.GetMessageId())
	if err != nil {
		return nil, err
	}
	m := s.queues[ref][i]
	q := slices.Delete(s.queues[ref], i, i+1)
	if s.running[ref] {
		s.queues[ref] = slices.Insert(q, 0, m)
		s.renumber(ref)
		return &queuev1.SendEnqueuedMessageNowResponse{EnqueuedMessage: clone(m), Message: "moved to the front: it is the next turn"}, nil
	}
	s.queues[ref] = q
	s.renumber(ref)
	s.leave(ref, m, "sent")
	return &queuev1.SendEnqueuedMessageNowResponse{EnqueuedMessage: clone(m), Delivered: true, Message: "delivered as the next turn"}, nil
}

// InterruptWithEnqueuedMessage implements queuev1.QueueServiceServer: the
// message is sent, after stopping the turn when the session runs one.
func (s *Server) InterruptWithEnqueuedMessage(ctx context.Context, req *queuev1.InterruptWithEnqueuedMessageRequest) (*queuev1.InterruptWithEnqueuedMessageResponse, error) {
	err := s.record(ctx, "InterruptWithEnqueuedMessage", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ref := req.GetSessionId()
	i, err := s.find(ref, req.GetMessageId())
	if err != nil {
		return nil, err
	}
	m := s.queues[ref][i]
	s.queues[ref] = slices.Delete(s.queues[ref], i, i+1)
	s.renumber(ref)
	s.leave(ref, m, "sent")
	interrupted := s.running[ref]
	s.running[ref] = true // the message is the running turn now
	return &queuev1.InterruptWithEnqueuedMessageResponse{EnqueuedMessage: clone(m), Interrupted: interrupted, Message: "delivered as the next turn"}, nil
}

// DeliverNextMessage implements queuev1.QueueServiceServer (internal:
// recorded, answered with nothing delivered).
func (s *Server) DeliverNextMessage(ctx context.Context, req *queuev1.DeliverNextMessageRequest) (*queuev1.DeliverNextMessageResponse, error) {
	err := s.record(ctx, "DeliverNextMessage", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &queuev1.DeliverNextMessageResponse{}, nil
}

// SealQueue implements queuev1.QueueServiceServer (internal: recorded,
// answered with no refusal).
func (s *Server) SealQueue(ctx context.Context, req *queuev1.SealQueueRequest) (*queuev1.SealQueueResponse, error) {
	err := s.record(ctx, "SealQueue", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &queuev1.SealQueueResponse{}, nil
}

// UnsealQueue implements queuev1.QueueServiceServer (internal: recorded).
func (s *Server) UnsealQueue(ctx context.Context, req *queuev1.UnsealQueueRequest) (*queuev1.UnsealQueueResponse, error) {
	err := s.record(ctx, "UnsealQueue", req)
	defer s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &queuev1.UnsealQueueResponse{}, nil
}
