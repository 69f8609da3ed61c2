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

// scriptedLifecycle answers every transition with err, recording what it
// was asked; it cannot be read back (GetSession is unimplemented).
type scriptedLifecycle struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	err   error
	asked []*lifecyclev1.TransitionSessionRequest
}

func (f *scriptedLifecycle) TransitionSession(_ context.Context, req *lifecyclev1.TransitionSessionRequest) (*lifecyclev1.TransitionSessionResponse, error) {
	f.asked = append(f.asked, req)
	if f.err != nil {
		return nil, f.err
	}
	return &lifecyclev1.TransitionSessionResponse{Session: &lifecyclev1.Session{Id: 7}, AlreadyApplied: true}, nil
}

func serveLifecycle(t *testing.T, l lifecyclev1.LifecycleServiceServer) *clients.Lifecycle {
	t.Helper()
	return clients.NewLifecycle(serve(t, func(s *grpc.Server) { lifecyclev1.RegisterLifecycleServiceServer(s, l) }))
}

// A transition names itself by its idempotency key, and the client takes
// lifecycle's answer as it is: already applied (a retry of a call that had
// landed) is success, a refusal is a RefusedError, and the session is never
// read back to guess which an earlier attempt did.
func TestATransitionIsAnsweredByItsKeyNotByAReadBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	applied := &scriptedLifecycle{}
	req := workflow.TransitionRequest{SessionID: 7, Event: workflow.EventResume, RunningJobID: "session-7/turn-5",
		SystemRecovery: true, IdempotencyKey: "session-7/run-1/turn-5/3-resume"}
	require.NoError(t, serveLifecycle(t, applied).Transition(ctx, req), "already applied is success")
	require.Len(t, applied.asked, 1)
	require.Equal(t, "session-7/run-1/turn-5/3-resume", applied.asked[0].GetIdempotencyKey())

	refusing := &scriptedLifecycle{err: status.Error(codes.FailedPrecondition, "cannot resume: it is running")}
	err := serveLifecycle(t, refusing).Transition(ctx, req)
	var refused *workflow.RefusedError
	require.ErrorAs(t, err, &refused, "running under another job: someone else resumed it")
	require.Contains(t, err.Error(), "cannot resume: it is running")

	gone := &scriptedLifecycle{err: status.Error(codes.NotFound, "no session 7")}
	require.ErrorAs(t, serveLifecycle(t, gone).Transition(ctx, req), &refused)
	require.Equal(t, "deleted", refused.Status)

	down := &scriptedLifecycle{err: status.Error(codes.Unavailable, "lifecycle is down")}
	err = serveLifecycle(t, down).Transition(ctx, req)
	require.Error(t, err)
	require.NotErrorAs(t, err, &refused, "asked again, not refused")
}
