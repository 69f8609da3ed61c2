package grpcapi_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/runner/internal/grpcapi"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

type signalWithStart struct {
	workflowID, signal string
	arg                any
	opts               client.StartWorkflowOptions
	workflow           any
	args               []any
}

type fakeStarter struct {
	calls      []signalWithStart
	interrupts []string // workflow ids
	err        error
}

func (f *fakeStarter) SignalWorkflow(_ context.Context, workflowID, _, signalName string, _ any) error {
	if signalName == workflow.SignalInterrupt {
		f.interrupts = append(f.interrupts, workflowID)
	}
	return f.err
}

func (f *fakeStarter) SignalWithStartWorkflow(_ context.Context, workflowID, signalName string, signalArg any,
	options client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	f.calls = append(f.calls, signalWithStart{workflowID, signalName, signalArg, options, wf, args})
	return nil, f.err
}

func consume(t *testing.T, c *grpcapi.Consumer, e *lifecyclev1.SessionEvent) (*lifecyclev1.ConsumeSessionEventResponse, error) {
	t.Helper()
	return c.ConsumeSessionEvent(t.Context(), &lifecyclev1.ConsumeSessionEventRequest{Event: e})
}

func TestCreationSignalsWithStartTheFirstTurn(t *testing.T) {
	t.Parallel()
	starter := &fakeStarter{}
	c := grpcapi.NewConsumer(starter, workflow.Starter{Node: "n1"}, "demo", slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	created := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	resp, err := consume(t, c, &lifecyclev1.SessionEvent{EventId: "ev-1", SessionId: 42, OccurredAt: timestamppb.New(created), Payload: &lifecyclev1.SessionEvent_Created{
		Created: &lifecyclev1.SessionCreated{Session: &lifecyclev1.Session{Id: 42, Prompt: "@demo say hi", GitRoot: "/repo", Branch: "main", Subdirectory: "svc"}},
	}})
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	require.Len(t, starter.calls, 1)
	call := starter.calls[0]
	require.Equal(t, "session/42", call.workflowID)
	require.Equal(t, workflow.SignalTurn, call.signal)
	require.Equal(t, workflow.TaskQueue, call.opts.TaskQueue)
	require.Equal(t, "session/42", call.opts.ID)
	require.Equal(t, workflow.WorkflowName, call.workflow)
	spec := workflow.SessionSpec{ID: 42, Runtime: "demo", GitRoot: "/repo", Branch: "main", Subdirectory: "svc"}
	require.Equal(t, workflow.TurnRequest{RequestID: "ev-1", Kind: workflow.KindFirst, Prompt: "@demo say hi", Session: spec, RequestedAt: created}, call.arg,
		"the turn carries lifecycle's time of the creation, where create → agent is timed from")
	require.Equal(t, []any{workflow.State{Session: spec}}, call.args, "the receiving node holds the clone")
}

func TestADeliberateResumeAsksForAResumeTurn(t *testing.T) {
	t.Parallel()
	starter := &fakeStarter{}
	c := grpcapi.NewConsumer(starter, workflow.Starter{Node: "n1"}, "demo", slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	updated := func(id string, tr *lifecyclev1.Transition) *lifecyclev1.SessionEvent {
		return &lifecyclev1.SessionEvent{EventId: id, SessionId: 42, Payload: &lifecyclev1.SessionEvent_Updated{
			Updated: &lifecyclev1.SessionUpdated{Session: &lifecyclev1.Session{Id: 42, AgentRuntime: "claude_code"}, Transition: tr},
		}}
	}
	restarted := updated("ev-2", &lifecyclev1.Transition{From: "needs_input", To: "running", Events: []string{"resume"}})
	restarted.GetUpdated().GetSession().RunningJobId = "resume/0d5c"
	restarted.GetUpdated().Turn = &lifecyclev1.TurnRequest{JobId: "resume/0d5c"}
	resp, err := consume(t, c, restarted)
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	require.Len(t, starter.calls, 1)
	require.Equal(t, workflow.TurnRequest{RequestID: "ev-2", Kind: workflow.KindResume, JobID: "resume/0d5c",
		Session: workflow.SessionSpec{ID: 42, Runtime: "claude_code"}}, starter.calls[0].arg,
		"the turn runs under the job lifecycle drew for the resume")

	resp, err = consume(t, c, updated("ev-3", &lifecyclev1.Transition{From: "running", To: "needs_input", Events: []string{"pause"}}))
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	require.Equal(t, []string{"session/42"}, starter.interrupts, "leaving running may stop the turn")

	for _, e := range []*lifecyclev1.SessionEvent{
		updated("ev-3b", &lifecyclev1.Transition{From: "needs_input", To: "waiting", Events: []string{"sleep"}}),
		// The runner's own recovery resume: lifecycle asks for no turn.
		updated("ev-3c", &lifecyclev1.Transition{From: "needs_input", To: "running", Events: []string{"resume"}}),
		updated("ev-4", nil),
		{EventId: "ev-5", SessionId: 42, Payload: &lifecyclev1.SessionEvent_Deleted{Deleted: &lifecyclev1.SessionDeleted{SessionId: 42}}},
	} {
		resp, err := consume(t, c, e)
		require.NoError(t, err)
		require.False(t, resp.GetApplied(), "no turn for %s", e.GetEventId())
	}
	require.Len(t, starter.calls, 1)
}

// Every update lifecycle marks with a turn asks for one, whatever the
// change: a queued message delivered to an idle session (a resume), or one
// delivered after the queue interrupted the running turn (no transition).
// The turn runs under the job lifecycle drew, with the message as prompt.
func TestAnUpdateCarryingATurnAsksForThatTurn(t *testing.T) {
	t.Parallel()
	starter := &fakeStarter{}
	c := grpcapi.NewConsumer(starter, workflow.Starter{Node: "n1"}, "demo", slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	session := &lifecyclev1.Session{Id: 42, AgentRuntime: "demo", GitRoot: "/repo", Branch: "main"}
	for _, tc := range []struct {
		id         string
		transition *lifecyclev1.Transition
		turn       *lifecyclev1.TurnRequest
	}{
		{"ev-10", &lifecyclev1.Transition{From: "needs_input", To: "running", Events: []string{"resume"}},
			&lifecyclev1.TurnRequest{JobId: "queue/1", Prompt: "@demo say the queued message"}},
		{"ev-11", nil, &lifecyclev1.TurnRequest{JobId: "queue/2", Prompt: "after the interrupt"}},
	} {
		resp, err := consume(t, c, &lifecyclev1.SessionEvent{EventId: tc.id, SessionId: 42, Payload: &lifecyclev1.SessionEvent_Updated{
			Updated: &lifecyclev1.SessionUpdated{Session: session, Transition: tc.transition, Turn: tc.turn},
		}})
		require.NoError(t, err)
		require.True(t, resp.GetApplied())
		require.Equal(t, workflow.TurnRequest{RequestID: tc.id, Kind: workflow.KindResume, JobID: tc.turn.GetJobId(),
			Prompt: tc.turn.GetPrompt(), Session: workflow.SessionSpec{ID: 42, Runtime: "demo", GitRoot: "/repo", Branch: "main"}},
			starter.calls[len(starter.calls)-1].arg)
	}
	require.Len(t, starter.calls, 2)
	require.Empty(t, starter.interrupts)

	_, err := consume(t, c, &lifecyclev1.SessionEvent{EventId: "ev-12", SessionId: 42, Payload: &lifecyclev1.SessionEvent_Updated{
		Updated: &lifecyclev1.SessionUpdated{Session: session, Turn: &lifecyclev1.TurnRequest{Prompt: "no job"}},
	}})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "a turn must run under the job lifecycle drew")
	require.Len(t, starter.calls, 2)
}

// A wake that fires on a session that never started asks for its first
// turn again (turn.first): a first turn with the session's prompt, as its
// creation asked, under no job of lifecycle's.
func TestAnUpdateAskingForTheFirstTurnAsksForAFirstTurn(t *testing.T) {
	t.Parallel()
	starter := &fakeStarter{}
	c := grpcapi.NewConsumer(starter, workflow.Starter{Node: "n1"}, "demo", slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	resp, err := consume(t, c, &lifecyclev1.SessionEvent{EventId: "ev-20", SessionId: 42, Payload: &lifecyclev1.SessionEvent_Updated{
		Updated: &lifecyclev1.SessionUpdated{
			Session: &lifecyclev1.Session{Id: 42, GitRoot: "/repo", Branch: "main"},
			Turn:    &lifecyclev1.TurnRequest{First: true, Prompt: "@demo say hi"},
		},
	}})
	require.NoError(t, err)
	require.True(t, resp.GetApplied())
	require.Len(t, starter.calls, 1)
	spec := workflow.SessionSpec{ID: 42, Runtime: "demo", GitRoot: "/repo", Branch: "main"}
	require.Equal(t, workflow.TurnRequest{RequestID: "ev-20", Kind: workflow.KindFirst, Prompt: "@demo say hi", Session: spec},
		starter.calls[0].arg)
	require.Equal(t, []any{workflow.State{Session: spec}}, starter.calls[0].args)
	require.Empty(t, starter.interrupts)
}

func TestUnreadableEventsAreRefusedAndTemporalTroubleIsRetried(t *testing.T) {
	t.Parallel()
	starter := &fakeStarter{err: errors.New("connection refused")}
	c := grpcapi.NewConsumer(starter, workflow.Starter{Node: "n1"}, "demo", slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	_, err := consume(t, c, &lifecyclev1.SessionEvent{SessionId: 1, Payload: &lifecyclev1.SessionEvent_Created{
		Created: &lifecyclev1.SessionCreated{Session: &lifecyclev1.Session{Id: 1}}}})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "an event without an id can never be deduplicated")
	_, err = consume(t, c, &lifecyclev1.SessionEvent{EventId: "e", Payload: &lifecyclev1.SessionEvent_Created{Created: &lifecyclev1.SessionCreated{}}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))

	_, err = consume(t, c, &lifecyclev1.SessionEvent{EventId: "e", Payload: &lifecyclev1.SessionEvent_Created{
		Created: &lifecyclev1.SessionCreated{Session: &lifecyclev1.Session{Id: 1}}}})
	require.Equal(t, codes.Unavailable, status.Code(err), "the relay retries a Temporal outage")
}
