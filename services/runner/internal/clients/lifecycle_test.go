package clients_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/runner/internal/clients"
	"github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// refusingLifecycle refuses every transition, the session standing as the
// test says.
type refusingLifecycle struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	session *lifecyclev1.Session
}

func (f *refusingLifecycle) TransitionSession(context.Context, *lifecyclev1.TransitionSessionRequest) (*lifecyclev1.TransitionSessionResponse, error) {
	return nil, status.Error(codes.FailedPrecondition, "cannot resume: it is running")
}

func (f *refusingLifecycle) GetSession(context.Context, *lifecyclev1.GetSessionRequest) (*lifecyclev1.GetSessionResponse, error) {
	return &lifecyclev1.GetSessionResponse{Session: f.session}, nil
}

func serveLifecycle(t *testing.T, l lifecyclev1.LifecycleServiceServer) *clients.Lifecycle {
	t.Helper()
	return clients.NewLifecycle(serve(t, func(s *grpc.Server) { lifecyclev1.RegisterLifecycleServiceServer(s, l) }))
}

// A refused resume is a retried call that had applied only when the
// session runs under the job it named: running under another job, someone
// else resumed it (a delivery between a recovery's pause and its resume),
// and the caller's turn must not run.
func TestRefusedResumeAppliedOnlyUnderItsOwnJob(t *testing.T) {
	t.Parallel()
	l := serveLifecycle(t, &refusingLifecycle{session: &lifecyclev1.Session{Id: 7, Status: "running", RunningJobId: "queue/m1"}})
	ctx := context.Background()

	require.NoError(t, l.Transition(ctx, workflow.TransitionRequest{SessionID: 7, Event: workflow.EventResume, RunningJobID: "queue/m1"}),
		"running under its job: the first attempt had applied")
	err := l.Transition(ctx, workflow.TransitionRequest{SessionID: 7, Event: workflow.EventResume, RunningJobID: "session-7/turn-5", SystemRecovery: true})
	var refused *workflow.RefusedError
	require.ErrorAs(t, err, &refused, "running under another job: someone else resumed it")
	require.NoError(t, l.Transition(ctx, workflow.TransitionRequest{SessionID: 7, Event: workflow.EventUnblock}),
		"an event naming no job settles on the status alone")
}
