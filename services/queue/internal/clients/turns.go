package clients

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/queue/internal/app"
)

// Turns delivers prompts as turns through lifecycle's DeliverTurn, as the
// queue service.
type Turns struct {
	client lifecyclev1.LifecycleServiceClient
}

var _ app.Turns = (*Turns)(nil)

// NewTurns returns the adapter over a connection to lifecycle.
func NewTurns(conn grpc.ClientConnInterface) *Turns {
	return &Turns{client: lifecyclev1.NewLifecycleServiceClient(conn)}
}

var modes = map[app.Mode]lifecyclev1.DeliveryMode{
	app.ModeIdle:           lifecyclev1.DeliveryMode_DELIVERY_MODE_IDLE,
	app.ModeHandover:       lifecyclev1.DeliveryMode_DELIVERY_MODE_HANDOVER,
	app.ModeAfterInterrupt: lifecyclev1.DeliveryMode_DELIVERY_MODE_AFTER_INTERRUPT,
}

// refusals names lifecycle's refusals the way app reads them.
var refusals = map[lifecyclev1.DeliveryRefusal]app.Refusal{
	lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED:            app.RefusalNone,
	lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY:                   app.RefusalBusy,
	lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_CLOSED:                 app.RefusalClosed,
	lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BLOCKED_ON_ELICITATION: app.RefusalBlocked,
	lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_AUTH_OUTAGE:            app.RefusalAuthOutage,
	lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_MCP_RETRY:              app.RefusalMCPRetry,
	lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_ASLEEP:                 app.RefusalAsleep,
}

// Deliver implements app.Turns.
func (t *Turns) Deliver(ctx context.Context, d app.Delivery) (app.Delivered, error) {
	resp, err := t.client.DeliverTurn(ctx, &lifecyclev1.DeliverTurnRequest{
		SessionId: d.SessionID, DeliveryId: d.ID, Prompt: d.Prompt, Goal: d.Goal,
		Mode: modes[d.Mode], FromJobId: d.FromJobID, Automatic: d.Automatic, What: d.What,
	})
	if err != nil {
		return app.Delivered{}, fmt.Errorf("lifecycle DeliverTurn %s to session %d: %w", d.ID, d.SessionID, err)
	}
	r, ok := refusals[resp.GetRefusal()]
	if !ok {
		r = app.RefusalBusy // a refusal this build does not know: never a delivery
	}
	return app.Delivered{
		JobID: resp.GetJobId(), Refusal: r, Message: resp.GetMessage(), Already: resp.GetAlreadyDelivered(),
	}, nil
}

// Runner interrupts turns through RunnerService.InterruptTurn, as the queue
// service.
type Runner struct {
	client runnerv1.RunnerServiceClient
}

var _ app.Interrupter = (*Runner)(nil)

// NewRunner returns the adapter over a connection to the runner.
func NewRunner(conn grpc.ClientConnInterface) *Runner {
	return &Runner{client: runnerv1.NewRunnerServiceClient(conn)}
}

// InterruptTurn implements app.Interrupter.
func (r *Runner) InterruptTurn(ctx context.Context, sessionID int64, turnID, reason string) (bool, error) {
	resp, err := r.client.InterruptTurn(ctx, &runnerv1.InterruptTurnRequest{SessionId: sessionID, Reason: reason, TurnId: turnID})
	if err != nil {
		return false, fmt.Errorf("runner InterruptTurn of session %d: %w", sessionID, err)
	}
	return resp.GetInterrupted(), nil
}
