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
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// fakeContext stands in for a context that owns effects (it consumes
// lifecycle events) and for notification's alert API.
type fakeContext struct {
	lifecyclev1.UnimplementedSessionEventConsumerServiceServer
	notificationv1.UnimplementedNotificationServiceServer
	mu       sync.Mutex
	down     bool
	refuse   bool // answer InvalidArgument, as a consumer does to an event it can never apply
	calls    int
	consumed map[string]string // event id → effect name
	alerts   []string          // dedup keys raised
}

func (f *fakeContext) ConsumeSessionEvent(_ context.Context, req *lifecyclev1.ConsumeSessionEventRequest) (*lifecyclev1.ConsumeSessionEventResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.down {
		return nil, status.Error(codes.Unavailable, "consumer down")
	}
	if f.refuse {
		return nil, status.Error(codes.InvalidArgument, "invalid event.created.session.title: too long")
	}
	id := req.GetEvent().GetEventId()
	if _, ok := f.consumed[id]; ok {
		return &lifecyclev1.ConsumeSessionEventResponse{}, nil
	}
	f.consumed[id] = effect.Name(req.GetEvent().GetEffect())
	return &lifecyclev1.ConsumeSessionEventResponse{Applied: true}, nil
}

func (f *fakeContext) RaiseAlert(_ context.Context, req *notificationv1.RaiseAlertRequest) (*notificationv1.RaiseAlertResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.alerts = append(f.alerts, req.GetDedupKey())
	return &notificationv1.RaiseAlertResponse{Paged: len(f.alerts) == 1}, nil
}

func (f *fakeContext) snapshot() (consumed map[string]string, alerts []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	consumed = map[string]string{}
	for k, v := range f.consumed {
		consumed[k] = v
	}
	return consumed, append([]string(nil), f.alerts...)
}

func startFakeContext(t *testing.T) (*fakeContext, string) {
	t.Helper()
	f := &fakeContext{consumed: map[string]string{}, down: true}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	lifecyclev1.RegisterSessionEventConsumerServiceServer(srv, f)
	notificationv1.RegisterNotificationServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return f, lis.Addr().String()
}

// TestFailingEffectsAreRetriedAndAlertingOnesPage: effects go to the
// context that owns them; a failure never undoes the transition; an
// alerting effect that keeps failing raises an alert keyed by the effect's
// name (not the session), the others only log; once the owner recovers,
// everything is delivered, each event once.
func TestFailingEffectsAreRetriedAndAlertingOnesPage(t *testing.T) {
	t.Parallel()
	owner, addr := startFakeContext(t)
	cfg := config.Config{
		Config: host.Config{
			GRPCAddr:    "127.0.0.1:0",
			DatabaseURL: pgtest.NewDatabase(t, service.MigrationSets...),
		},
		RelayPollInterval:  50 * time.Millisecond,
		EffectConsumers:    map[string]string{"queue": addr, "notification": addr},
		NotificationAddr:   addr,
		AlertAfterAttempts: 2,
	}
	svc, err := service.New(context.Background(), cfg, slogx.Discard())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done); svc.Close() })

	for i := range 2 {
		s, err := svc.Sessions.Create.Handle(context.Background(), validSession(i))
		require.NoError(t, err)
		for _, ev := range []string{"start", "pause"} {
			_, err := svc.Sessions.Transition.Handle(context.Background(), fmt.Sprint(s.ID), verb(ev), command())
			require.NoError(t, err, "a failing effect never undoes the transition")
		}
	}

	// Two sessions' drains keep failing: alerts, all under the effect's name.
	require.Eventually(t, func() bool {
		_, alerts := owner.snapshot()
		return len(alerts) >= 2
	}, 20*time.Second, 20*time.Millisecond)
	_, alerts := owner.snapshot()
	for _, k := range alerts {
		require.Equal(t, "drain_enqueued_messages_after_pause", k,
			"only alerting effects page (the pushes only log), keyed by effect, not session")
	}

	owner.mu.Lock()
	owner.down = false
	owner.mu.Unlock()
	require.Eventually(t, func() bool {
		var pending int
		require.NoError(t, svc.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM outbox_messages WHERE subscriber IN ('queue', 'notification') AND delivered_at IS NULL`).Scan(&pending))
		return pending == 0
	}, 60*time.Second, 50*time.Millisecond, "the retries deliver once the owner is back")
	consumed, _ := owner.snapshot()
	var drains, pushes int
	for _, name := range consumed {
		switch name {
		case "drain_enqueued_messages_after_pause":
			drains++
		case "enqueue_debounced_needs_input_push_notification":
			pushes++
		}
	}
	require.Equal(t, 2, drains)
	require.Equal(t, 2, pushes)

	var waiting int
	require.NoError(t, svc.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM outbox_messages WHERE subscriber = 'runner' AND delivered_at IS NULL`).Scan(&waiting))
	require.Equal(t, 4, waiting, "an owner with no consumer configured keeps its effects (inference, status summary) in the outbox")
}

func validSession(i int) domain.NewSession {
	return domain.NewSession{Prompt: fmt.Sprintf("task %d", i), GitRoot: "g"}
}

func verb(ev string) app.Verb { return app.Verb(ev) }

func command() domain.Command { return domain.Command{} }

// TestARefusedEventIsParkedDeadAndPagesOnce: a consumer that answers
// InvalidArgument will never take the event, so it is not retried: the
// outbox row is parked as dead with the consumer's error, and one alert,
// keyed by subscriber and topic, says so.
func TestARefusedEventIsParkedDeadAndPagesOnce(t *testing.T) {
	t.Parallel()
	lineage, addr := startFakeContext(t)
	lineage.down, lineage.refuse = false, true
	cfg := config.Config{
		Config: host.Config{
			GRPCAddr:    "127.0.0.1:0",
			DatabaseURL: pgtest.NewDatabase(t, service.MigrationSets...),
		},
		RelayPollInterval: 20 * time.Millisecond,
		EffectConsumers:   map[string]string{"lineage": addr},
		NotificationAddr:  addr,
	}
	svc, err := service.New(context.Background(), cfg, slogx.Discard())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done); svc.Close() })

	_, err = svc.Sessions.Create.Handle(context.Background(), validSession(0))
	require.NoError(t, err)

	var lastError string
	require.Eventually(t, func() bool {
		err := svc.Pool.QueryRow(context.Background(),
			`SELECT last_error FROM outbox_messages WHERE subscriber = 'lineage' AND dead_at IS NOT NULL`).Scan(&lastError)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the refused event is parked as dead")
	require.Contains(t, lastError, "too long", "with the consumer's error")

	time.Sleep(10 * cfg.RelayPollInterval) // rounds in which a retry would show
	lineage.mu.Lock()
	defer lineage.mu.Unlock()
	require.Equal(t, 1, lineage.calls, "never retried")
	require.Equal(t, []string{"outbox_dead_letter/lineage/lifecycle.session_created"}, lineage.alerts, "one page")
}
