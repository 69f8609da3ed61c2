package service_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/config"
	"github.com/zimmerhq/zimmer/services/lineage/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// recordingConsumer is a consumer of lineage's events that keeps what it
// was handed.
type recordingConsumer struct {
	lineagev1.UnimplementedLineageEventConsumerServiceServer
	mu     sync.Mutex
	events []*lineagev1.LineageEvent
}

func (c *recordingConsumer) ConsumeLineageEvent(_ context.Context, req *lineagev1.ConsumeLineageEventRequest) (*lineagev1.ConsumeLineageEventResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, req.GetEvent())
	return &lineagev1.ConsumeLineageEventResponse{Applied: true}, nil
}

func (c *recordingConsumer) received() []*lineagev1.LineageEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*lineagev1.LineageEvent(nil), c.events...)
}

// TestRelayDeliversUncleEdgeChangesToTheListedConsumers runs lineage with a
// consumer listed in LINEAGE_EVENT_CONSUMERS: an uncle edge written reaches
// it, with the line for each session; a refusal sends nothing.
func TestRelayDeliversUncleEdgeChangesToTheListedConsumers(t *testing.T) {
	t.Parallel()
	consumer := &recordingConsumer{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	lineagev1.RegisterLineageEventConsumerServiceServer(gs, consumer)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	cfg := config.Config{
		Config:         servicetest.Config(t, service.MigrationSets...),
		EventConsumers: map[string]string{"lifecycle": lis.Addr().String()},
	}
	svc := servicetest.New(t, service.NewFromConfig, cfg)
	require.Contains(t, svc.Relays, "lifecycle")
	servicetest.RunInBackground(t, svc.Run)
	client := newLineageClient(servicetest.DialAsService(t, svc.Addr(), "lifecycle"))
	ctx := t.Context()

	for _, id := range []int64{31, 32} {
		_, err := client.ConsumeSessionEvent(ctx, created(fmt.Sprintf("6b0e7a4e-0000-4000-8000-0000000000%d", id),
			&lifecyclev1.Session{Id: id, Title: "t", AgentRoot: "zimmer", Status: "running", Genesis: "api", SchedulingClass: "spot"}))
		require.NoError(t, err)
	}
	rec, err := client.RecordUncleEdge(ctx, &lineagev1.RecordUncleEdgeRequest{ActingSessionId: 31, TargetSessionId: 31, EntryPoint: "rest.follow_up"})
	require.NoError(t, err)
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_SELF, rec.GetOutcome())
	// Recorded for a client the gateway relays: session #31's agent, with
	// its credential.
	asSession31, err := principal.Outgoing(ctx, principal.Principal{Kind: principal.Session, SessionID: 31, CredentialID: "c31", Scopes: []string{principal.ScopeSelf}})
	require.NoError(t, err)
	rec, err = client.RecordUncleEdge(asSession31, &lineagev1.RecordUncleEdgeRequest{ActingSessionId: 31, TargetSessionId: 32, EntryPoint: "rest.follow_up"})
	require.NoError(t, err)
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, rec.GetOutcome())

	// The commit wakes the relay: no poll interval to wait out.
	require.Eventually(t, func() bool { return len(consumer.received()) == 1 }, 5*time.Second, 10*time.Millisecond)
	got := consumer.received()[0].GetUncleEdgeChanged()
	require.Equal(t, int64(31), got.GetActingSessionId())
	require.Equal(t, int64(32), got.GetTargetSessionId())
	require.Len(t, got.GetLines(), 2)
	require.Equal(t, int64(31), got.GetLines()[0].GetSessionId())
	require.Equal(t, int64(32), got.GetLines()[1].GetSessionId())
	require.Contains(t, got.GetLines()[1].GetMessage(), "session #31 is now an uncle of session #")
	require.Contains(t, got.GetLines()[1].GetMessage(), "via rest.follow_up")
	for _, l := range got.GetLines() {
		require.True(t, strings.HasSuffix(l.GetMessage(), " (by session #31's credential)"), "each line names who made the call: %s", l.GetMessage())
	}
	require.Never(t, func() bool { return len(consumer.received()) > 1 }, 300*time.Millisecond, 20*time.Millisecond,
		"the self-addressed call changed nothing and sent nothing")
}

// refusingConsumer refuses every event as invalid, as a consumer does with
// an event it can never apply.
type refusingConsumer struct {
	lineagev1.UnimplementedLineageEventConsumerServiceServer
}

func (refusingConsumer) ConsumeLineageEvent(context.Context, *lineagev1.ConsumeLineageEventRequest) (*lineagev1.ConsumeLineageEventResponse, error) {
	return nil, status.Error(codes.InvalidArgument, "cannot apply this event")
}

// pager is notification's RaiseAlert, keeping the keys it was asked to page.
type pager struct {
	notificationv1.UnimplementedNotificationServiceServer
	mu   sync.Mutex
	keys []string
}

func (p *pager) RaiseAlert(_ context.Context, req *notificationv1.RaiseAlertRequest) (*notificationv1.RaiseAlertResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = append(p.keys, req.GetDedupKey())
	return &notificationv1.RaiseAlertResponse{}, nil
}

func (p *pager) raised() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.keys...)
}

func serve(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer()
	register(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// TestADeadLetterPages: an event lineage's consumer refuses is parked as
// dead and raises one alert through notification, as lifecycle's do.
func TestADeadLetterPages(t *testing.T) {
	t.Parallel()
	alerts := &pager{}
	cfg := config.Config{
		Config: servicetest.Config(t, service.MigrationSets...),
		EventConsumers: map[string]string{"lifecycle": serve(t, func(s *grpc.Server) {
			lineagev1.RegisterLineageEventConsumerServiceServer(s, refusingConsumer{})
		})},
		NotificationAddr: serve(t, func(s *grpc.Server) { notificationv1.RegisterNotificationServiceServer(s, alerts) }),
	}
	svc := servicetest.New(t, service.NewFromConfig, cfg)
	servicetest.RunInBackground(t, svc.Run)
	client := newLineageClient(servicetest.DialAsService(t, svc.Addr(), "lifecycle"))
	ctx := t.Context()
	for _, id := range []int64{41, 42} {
		_, err := client.ConsumeSessionEvent(ctx, created(fmt.Sprintf("6b0e7a4e-0000-4000-8000-0000000000%d", id),
			&lifecyclev1.Session{Id: id, Title: "t", AgentRoot: "zimmer", Status: "running", Genesis: "api", SchedulingClass: "spot"}))
		require.NoError(t, err)
	}
	rec, err := client.RecordUncleEdge(ctx, &lineagev1.RecordUncleEdgeRequest{ActingSessionId: 41, TargetSessionId: 42, EntryPoint: "rest.follow_up"})
	require.NoError(t, err)
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, rec.GetOutcome())

	require.Eventually(t, func() bool { return len(alerts.raised()) == 1 }, 5*time.Second, 10*time.Millisecond)
	require.True(t, strings.HasPrefix(alerts.raised()[0], "outbox_dead_letter/lifecycle/"), alerts.raised()[0])
	require.Never(t, func() bool { return len(alerts.raised()) > 1 }, 300*time.Millisecond, 20*time.Millisecond, "one page")
}
