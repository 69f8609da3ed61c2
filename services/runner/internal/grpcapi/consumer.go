package grpcapi

import (
	"context"
	"errors"
	"log/slog"

	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// TurnStarter is the Temporal client's SignalWithStartWorkflow and
// SignalWorkflow.
type TurnStarter interface {
	workflow.TurnStarter
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// Consumer implements lifecyclev1.SessionEventConsumerServiceServer for the
// events lifecycle addresses to the runner's turns: a session created, and
// an update carrying a turn (SessionUpdated.turn: a restart, a delivered
// follow-up or queued message), whose job id lifecycle drew and the turn
// adopts as its id — or, with turn.first, the session's first turn asked
// again. Each becomes a turn request, signalled to the session's
// workflow, which is started if it is not running (SignalWithStart): the
// request and the start are one call, so none is lost between them.
// Delivery is at least once; the workflow drops a request id it has seen,
// so a redelivery runs no second turn.
type Consumer struct {
	lifecyclev1.UnimplementedSessionEventConsumerServiceServer
	turns          TurnStarter
	starter        workflow.Starter
	defaultRuntime string
	logger         *slog.Logger
	// effects carries out the effects addressed to the subscriber
	// "runner" (effects.go); nil: they are answered applied false.
	effects *Effects
}

// WithEffects makes the consumer hand lifecycle's effects to e.
func (c *Consumer) WithEffects(e *Effects) *Consumer {
	c.effects = e
	return c
}

var _ lifecyclev1.SessionEventConsumerServiceServer = (*Consumer)(nil)

// NewConsumer returns the consumer; defaultRuntime names the runtime of a
// session created without one (shown in the workflow's memo).
func NewConsumer(turns TurnStarter, starter workflow.Starter, defaultRuntime string, logger *slog.Logger) *Consumer {
	starter.Client = turns
	return &Consumer{turns: turns, starter: starter, defaultRuntime: defaultRuntime, logger: logger}
}

// Register adds the consumer to g.
func (c *Consumer) Register(g *grpc.Server) {
	lifecyclev1.RegisterSessionEventConsumerServiceServer(g, c)
}

// ConsumeSessionEvent implements lifecyclev1.SessionEventConsumerServiceServer.
func (c *Consumer) ConsumeSessionEvent(ctx context.Context, req *lifecyclev1.ConsumeSessionEventRequest) (*lifecyclev1.ConsumeSessionEventResponse, error) {
	if req.GetEvent().GetEffect() != nil {
		if c.effects == nil {
			return effect.Unhandled(ctx, c.logger, req.GetEvent(), "this runner carries out no effects"), nil
		}
		return c.effects.Consume(ctx, req.GetEvent())
	}
	if leftRunning(req.GetEvent()) {
		return c.interrupt(ctx, req.GetEvent())
	}
	turn, ok, err := turnRequest(req.GetEvent())
	if err != nil {
		return nil, toStatus(err)
	}
	if !ok {
		return &lifecyclev1.ConsumeSessionEventResponse{Applied: false}, nil
	}
	if turn.Session.Runtime == "" {
		turn.Session.Runtime = c.defaultRuntime
	}
	err = c.starter.Send(ctx, turn)
	if err != nil {
		c.logger.Warn("signal-with-start a session's workflow", "session_id", turn.Session.ID, "error", err)
		// Temporal's trouble is transient for the relay: it retries.
		return nil, toStatus(refuse(codes.Unavailable, "hand the turn of session %d to Temporal: %v", turn.Session.ID, err))
	}
	return &lifecyclev1.ConsumeSessionEventResponse{Applied: true}, nil
}

// leftRunning: the event announces a transition out of running.
func leftRunning(e *lifecyclev1.SessionEvent) bool {
	t := e.GetUpdated().GetTransition()
	return t != nil && t.GetFrom() == rules.StatusRunning && t.GetTo() != rules.StatusRunning
}

// interrupt asks the session's workflow to stop its running turn; the
// workflow stops it only if the session is still not running (this event may
// be late) and not merely blocked on an elicitation. No workflow, no turn.
func (c *Consumer) interrupt(ctx context.Context, e *lifecyclev1.SessionEvent) (*lifecyclev1.ConsumeSessionEventResponse, error) {
	if e.GetEventId() == "" || e.GetSessionId() == 0 {
		return nil, toStatus(validation.Invalid("event", "an update needs its event_id and session_id"))
	}
	err := c.turns.SignalWorkflow(ctx, workflow.ID(e.GetSessionId()), "", workflow.SignalInterrupt,
		workflow.InterruptRequest{RequestID: e.GetEventId()})
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return &lifecyclev1.ConsumeSessionEventResponse{Applied: false}, nil
	case err != nil:
		return nil, toStatus(refuse(codes.Unavailable, "signal the workflow of session %d: %v", e.GetSessionId(), err))
	}
	return &lifecyclev1.ConsumeSessionEventResponse{Applied: true}, nil
}

// turnRequest reads the turn an event asks for; ok is false for an event
// that asks for none.
func turnRequest(e *lifecyclev1.SessionEvent) (workflow.TurnRequest, bool, error) {
	if e == nil {
		return workflow.TurnRequest{}, false, validation.Invalid("event", "missing")
	}
	if e.GetEventId() == "" {
		return workflow.TurnRequest{}, false, validation.Invalid("event.event_id", "missing")
	}
	var (
		s   *lifecyclev1.Session
		req = workflow.TurnRequest{RequestID: e.GetEventId()}
	)
	switch p := e.GetPayload().(type) {
	case *lifecyclev1.SessionEvent_Created:
		s = p.Created.GetSession()
		req.Kind, req.Prompt = workflow.KindFirst, s.GetPrompt()
	case *lifecyclev1.SessionEvent_Updated:
		// Only lifecycle says which changes ask for a turn: a resume the
		// runner made itself (a recovery) carries none.
		turn := p.Updated.GetTurn()
		s = p.Updated.GetSession()
		switch {
		case turn == nil:
			return workflow.TurnRequest{}, false, nil
		case turn.GetFirst():
			// The first turn asked again (a wake fired on a session whose
			// start was refused while it was ahead): the workflow drops it
			// if the session has started meanwhile.
			req.Kind, req.Prompt = workflow.KindFirst, turn.GetPrompt()
		case turn.GetJobId() == "":
			return workflow.TurnRequest{}, false, validation.Invalid("event.updated.turn.job_id", "missing")
		default:
			req.Kind, req.JobID, req.Prompt = workflow.KindResume, turn.GetJobId(), turn.GetPrompt()
		}
	default:
		return workflow.TurnRequest{}, false, nil
	}
	if s == nil || s.GetId() == 0 {
		return workflow.TurnRequest{}, false, validation.Invalid("event.session", "missing")
	}
	req.Session = workflow.SessionSpec{
		ID: s.GetId(), Runtime: s.GetAgentRuntime(), GitRoot: s.GetGitRoot(),
		Branch: s.GetBranch(), Subdirectory: s.GetSubdirectory(),
	}
	if e.GetOccurredAt() != nil {
		// Lifecycle's time of the change that asked: where the whole-path
		// latency histograms start.
		req.RequestedAt = e.GetOccurredAt().AsTime()
	}
	return req, true, nil
}
