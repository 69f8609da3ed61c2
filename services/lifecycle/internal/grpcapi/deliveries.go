package grpcapi

import (
	"context"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
)

var (
	deliveryModes = map[lifecyclev1.DeliveryMode]domain.DeliveryMode{
		lifecyclev1.DeliveryMode_DELIVERY_MODE_IDLE:            domain.DeliverToIdle,
		lifecyclev1.DeliveryMode_DELIVERY_MODE_HANDOVER:        domain.DeliverHandover,
		lifecyclev1.DeliveryMode_DELIVERY_MODE_AFTER_INTERRUPT: domain.DeliverAfterInterrupt,
	}
	deliveryRefusals = map[domain.DeliveryRefusal]lifecyclev1.DeliveryRefusal{
		domain.RefusedBusy:                 lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY,
		domain.RefusedClosed:               lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_CLOSED,
		domain.RefusedBlockedOnElicitation: lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BLOCKED_ON_ELICITATION,
		domain.RefusedAuthOutage:           lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_AUTH_OUTAGE,
		domain.RefusedMCPRetry:             lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_MCP_RETRY,
		domain.RefusedAsleep:               lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_ASLEEP,
	}
)

// refusal is a refusal's enum and words; UNSPECIFIED and "" for none.
func refusal(r *domain.DeliveryRefused) (lifecyclev1.DeliveryRefusal, string) {
	if r == nil {
		return lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED, ""
	}
	return deliveryRefusals[r.Reason], r.Message
}

// DeliverTurn implements lifecyclev1.LifecycleServiceServer: internal, the
// queue's one way to make a prompt a turn. A refusal is an answer, not an
// error.
func (s *Server) DeliverTurn(ctx context.Context, req *lifecyclev1.DeliverTurnRequest) (*lifecyclev1.DeliverTurnResponse, error) {
	got, err := s.sessions.Deliver.Handle(ctx, req.GetSessionId(), domain.DeliverCommand{
		DeliveryID: req.GetDeliveryId(),
		Prompt:     req.GetPrompt(),
		Goal:       req.GetGoal(),
		Mode:       deliveryModes[req.GetMode()], // unknown: the zero mode, which Validate refuses
		FromJobID:  req.GetFromJobId(),
		Automatic:  req.GetAutomatic(),
		What:       req.GetWhat(),
		By:         auditBy(ctx),
	})
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	sess, err := wire.Session(got.Session)
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	code, message := refusal(got.Refused)
	return &lifecyclev1.DeliverTurnResponse{
		Refusal: code, Message: message, JobId: got.JobID, AlreadyDelivered: got.AlreadyDelivered, Session: sess,
	}, nil
}

// RecordDrainAttempt implements lifecyclev1.LifecycleServiceServer:
// internal, the queue's after-pause drain counting its attempts.
func (s *Server) RecordDrainAttempt(ctx context.Context, req *lifecyclev1.RecordDrainAttemptRequest) (*lifecyclev1.RecordDrainAttemptResponse, error) {
	attempts, refused, err := s.sessions.DrainAttempt.Handle(ctx, req.GetSessionId())
	if err != nil {
		return nil, s.toStatus(ctx, err)
	}
	code, message := refusal(refused)
	return &lifecyclev1.RecordDrainAttemptResponse{Refusal: code, Message: message, Attempts: int32(attempts)}, nil
}
