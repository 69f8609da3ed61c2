package grpcapi

import (
	"context"
	"fmt"
	"strconv"

	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/queue/internal/app"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// FollowUp implements queuev1.QueueServiceServer.
func (s *Server) FollowUp(ctx context.Context, req *queuev1.FollowUpRequest) (*queuev1.FollowUpResponse, error) {
	r, err := s.queue.FollowUp.Handle(ctx, app.FollowUp{
		SessionRef: req.GetSessionId(), Prompt: req.GetPrompt(), Goal: req.GetGoal(), ForceImmediate: req.GetForceImmediate(),
		ActingSessionID: req.GetActingSessionId(), IdempotencyKey: req.GetIdempotencyKey(),
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	out := &queuev1.FollowUpResponse{Message: r.Message, JobId: r.JobID, UncleEdge: lineagev1.UncleEdgeOutcome(r.Uncle.Outcome)}
	if r.Delivered {
		out.Outcome = queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED
	} else {
		out.Outcome = queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED
		out.EnqueuedMessage = toProto(r.Queued)
	}
	return out, nil
}

// noticeOrigins are the origins of the notices' kinds.
var noticeOrigins = map[queuev1.NoticeKind]domain.Origin{
	queuev1.NoticeKind_NOTICE_KIND_PR_MERGED:      domain.OriginAutomatedPRMerged,
	queuev1.NoticeKind_NOTICE_KIND_MERGE_CONFLICT: domain.OriginAutomatedMergeConflict,
	queuev1.NoticeKind_NOTICE_KIND_ARTIFACT:       domain.OriginCaller,
}

// QueueNotice implements queuev1.QueueServiceServer: a follow-up whose
// origin its kind decides, queued on a failed session too (QU-21).
func (s *Server) QueueNotice(ctx context.Context, req *queuev1.QueueNoticeRequest) (*queuev1.QueueNoticeResponse, error) {
	origin, ok := noticeOrigins[req.GetKind()]
	var vs validation.Violations
	if !ok {
		vs.Add("kind", "must be one of NOTICE_KIND_PR_MERGED, NOTICE_KIND_MERGE_CONFLICT, NOTICE_KIND_ARTIFACT")
	}
	if req.GetIdempotencyKey() == "" {
		vs.Add("idempotency_key", "is required: a notice sent twice must be queued once")
	}
	if err := vs.Err(); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	r, err := s.queue.FollowUp.Handle(ctx, app.FollowUp{
		SessionRef: strconv.FormatInt(req.GetSessionId(), 10), Prompt: req.GetContent(),
		IdempotencyKey: req.GetIdempotencyKey(), Origin: origin, QueueOnFailed: true,
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if r.Delivered {
		return &queuev1.QueueNoticeResponse{Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED}, nil
	}
	return &queuev1.QueueNoticeResponse{Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, EnqueuedMessage: toProto(r.Queued)}, nil
}

// SendEnqueuedMessageNow implements queuev1.QueueServiceServer.
func (s *Server) SendEnqueuedMessageNow(ctx context.Context, req *queuev1.SendEnqueuedMessageNowRequest) (*queuev1.SendEnqueuedMessageNowResponse, error) {
	m, delivered, err := s.queue.SendNow.Handle(ctx, req.GetSessionId(), req.GetMessageId(), req.GetActingSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	msg := fmt.Sprintf("Message %d delivered: it is session %d's turn now.", m.ID, m.SessionID)
	if !delivered {
		msg = fmt.Sprintf("Session %d is running: message %d moved to the front of its queue and is sent when the current turn ends. "+
			"To stop the turn and send it now, interrupt instead.", m.SessionID, m.ID)
	}
	return &queuev1.SendEnqueuedMessageNowResponse{EnqueuedMessage: toProto(m), Delivered: delivered, Message: msg}, nil
}

// InterruptWithEnqueuedMessage implements queuev1.QueueServiceServer.
func (s *Server) InterruptWithEnqueuedMessage(ctx context.Context, req *queuev1.InterruptWithEnqueuedMessageRequest) (*queuev1.InterruptWithEnqueuedMessageResponse, error) {
	m, interrupted, err := s.queue.Interrupt.Handle(ctx, req.GetSessionId(), req.GetMessageId(), req.GetActingSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	msg := fmt.Sprintf("The running turn was stopped; message %d is session %d's turn now.", m.ID, m.SessionID)
	switch {
	case m.Status == domain.StatusPending:
		msg = domain.NextInLineMessage(m)
	case !interrupted:
		msg = fmt.Sprintf("No turn was running; message %d is session %d's turn now.", m.ID, m.SessionID)
	}
	return &queuev1.InterruptWithEnqueuedMessageResponse{EnqueuedMessage: toProto(m), Interrupted: interrupted, Message: msg}, nil
}

// DeliverNextMessage implements queuev1.QueueServiceServer.
func (s *Server) DeliverNextMessage(ctx context.Context, req *queuev1.DeliverNextMessageRequest) (*queuev1.DeliverNextMessageResponse, error) {
	h, ok, err := s.queue.DeliverNext.Handle(ctx, req.GetSessionId(), req.GetFromJobId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	if !ok {
		return &queuev1.DeliverNextMessageResponse{}, nil
	}
	return &queuev1.DeliverNextMessageResponse{Delivered: true, EnqueuedMessage: toProto(h.Message), JobId: h.JobID, Prompt: h.Message.Content}, nil
}

// SealQueue implements queuev1.QueueServiceServer.
func (s *Server) SealQueue(ctx context.Context, req *queuev1.SealQueueRequest) (*queuev1.SealQueueResponse, error) {
	refusal, clause, live, err := s.queue.Seal.Handle(ctx, req.GetSessionId(), req.GetAttemptId(), req.GetForce())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &queuev1.SealQueueResponse{Refusal: refusal, RetirementClause: clause, LiveMessages: int32(live)}, nil
}

// UnsealQueue implements queuev1.QueueServiceServer.
func (s *Server) UnsealQueue(ctx context.Context, req *queuev1.UnsealQueueRequest) (*queuev1.UnsealQueueResponse, error) {
	if err := s.queue.Unseal.Handle(ctx, req.GetSessionId(), req.GetAttemptId()); err != nil {
		return nil, s.toStatus(ctx, err)
	}
	return &queuev1.UnsealQueueResponse{}, nil
}
