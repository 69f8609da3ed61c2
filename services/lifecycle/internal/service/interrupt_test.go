package service_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// fakeRunner answers InterruptTurn and records, for each call, the status
// the session had in lifecycle at that moment: a halt that comes first sees
// it still running.
type fakeRunner struct {
	runnerv1.UnimplementedRunnerServiceServer
	lifecycle func() lifecyclev1.LifecycleServiceClient

	mu    sync.Mutex
	calls []interruptCall
}

type interruptCall struct {
	sessionID    int64
	reason       string
	statusDuring string
}

func (f *fakeRunner) InterruptTurn(ctx context.Context, req *runnerv1.InterruptTurnRequest) (*runnerv1.InterruptTurnResponse, error) {
	got, err := f.lifecycle().GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(req.GetSessionId())})
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, interruptCall{req.GetSessionId(), req.GetReason(), got.GetSession().GetStatus()})
	return &runnerv1.InterruptTurnResponse{Interrupted: true, TurnId: "session-x/turn-1"}, nil
}

func (f *fakeRunner) recorded() []interruptCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]interruptCall(nil), f.calls...)
}

// setupWithRunner is setup with LIFECYCLE_RUNNER_ADDR at runnerAddr.
func setupWithRunner(t *testing.T, runnerAddr string) testBundle {
	t.Helper()
	cfg := config.Config{
		Config: host.Config{
			GRPCAddr: "127.0.0.1:0", DatabaseURL: pgtest.NewDatabase(t, service.MigrationSets...),
			APIKeys: servicetest.OperatorKey, AdminAPIKeys: servicetest.AdminKey, InternalToken: servicetest.InternalToken,
		},
		RelayPollInterval: 50 * time.Millisecond,
		RunnerAddr:        runnerAddr,
		RunnerTimeout:     5 * time.Second,
	}
	svc := servicetest.New(t, service.New, cfg)
	servicetest.RunInBackground(t, svc.Run)
	conn := servicetest.DialAdmin(t, svc.Addr())
	return testBundle{
		client: lifecyclev1.NewLifecycleServiceClient(conn), conn: conn, svc: svc,
		operator: lifecyclev1.NewLifecycleServiceClient(servicetest.DialOperator(t, svc.Addr())),
	}
}

func startFakeRunner(t *testing.T) (*fakeRunner, string) {
	t.Helper()
	f := &fakeRunner{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	runnerv1.RegisterRunnerServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return f, lis.Addr().String()
}

func (b testBundle) running(t *testing.T) int64 {
	t.Helper()
	id := b.create(t, &lifecyclev1.CreateSessionRequest{}).GetId()
	_, err := b.fire(t, id, "start", func(r *lifecyclev1.TransitionSessionRequest) { r.RunningJobId = "session-x/turn-1" })
	require.NoError(t, err)
	return id
}

func TestPauseAndArchiveOfARunningSessionHaltTheTurnFirst(t *testing.T) {
	t.Parallel()
	runner, addr := startFakeRunner(t)
	b := setupWithRunner(t, addr)
	runner.lifecycle = func() lifecyclev1.LifecycleServiceClient { return b.client }
	ctx := t.Context()

	paused := b.running(t)
	resp, err := b.operator.PauseSession(ctx, &lifecyclev1.PauseSessionRequest{SessionId: fmt.Sprint(paused)})
	require.NoError(t, err)
	require.Equal(t, "needs_input", resp.GetSession().GetStatus())
	require.Equal(t, "user", resp.GetSession().GetPausedBy())

	archived := b.running(t)
	_, err = b.operator.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: fmt.Sprint(archived)})
	require.NoError(t, err)

	require.Equal(t, []interruptCall{
		{paused, "pause", "running"},
		{archived, "archive", "running"},
	}, runner.recorded(), "the runner halts the turn while the session is still running, before the transition")

	// No turn runs in a session that is not running: the runner is not asked.
	idle := b.create(t, &lifecyclev1.CreateSessionRequest{}).GetId()
	_, err = b.operator.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: fmt.Sprint(idle)})
	require.NoError(t, err)
	// The runner's own pause (the raw event, at a turn's end) does not ask it.
	own := b.running(t)
	_, err = b.fire(t, own, "pause")
	require.NoError(t, err)
	require.Len(t, runner.recorded(), 2)
}

func TestPauseAnswersUnavailableWhenTheRunnerIsDownButArchiveGoesOn(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := lis.Addr().String()
	require.NoError(t, lis.Close()) // nothing listens there
	b := setupWithRunner(t, down)
	ctx := t.Context()

	id := b.running(t)
	_, err = b.operator.PauseSession(ctx, &lifecyclev1.PauseSessionRequest{SessionId: fmt.Sprint(id)})
	require.Equal(t, codes.Unavailable, status.Code(err), "retry: the agent was not halted: %v", err)
	require.Contains(t, status.Convert(err).Message(), "retry")
	got, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(id)})
	require.NoError(t, err)
	require.Equal(t, "running", got.GetSession().GetStatus(), "a pause that could not halt the turn is not applied")

	archived, err := b.operator.ArchiveSession(ctx, &lifecyclev1.ArchiveSessionRequest{SessionId: fmt.Sprint(id)})
	require.NoError(t, err, "an archive does not depend on the runner: its announcement stops the turn")
	require.Equal(t, "archived", archived.GetSession().GetStatus())
}
