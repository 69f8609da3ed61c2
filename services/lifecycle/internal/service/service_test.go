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
	"go.temporal.io/sdk/client"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/retention"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// fakeLineage is an idempotent consumer: it records each spawn edge once per
// event id, as the real lineage service does with its inbox.
type fakeLineage struct {
	lifecyclev1.UnimplementedSessionEventConsumerServiceServer
	mu         sync.Mutex
	deliveries int
	edges      map[string][2]int64 // event id → (child, parent), for created events
	applied    map[string]int      // event id → times applied (must stay 1)
	fail       bool
}

func (f *fakeLineage) ConsumeSessionEvent(_ context.Context, req *lifecyclev1.ConsumeSessionEventRequest) (*lifecyclev1.ConsumeSessionEventResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deliveries++
	if f.fail {
		return nil, status.Error(codes.Unavailable, "lineage is down")
	}
	id := req.GetEvent().GetEventId()
	if f.applied[id] > 0 {
		return &lifecyclev1.ConsumeSessionEventResponse{Applied: false}, nil
	}
	f.applied[id]++
	if s := req.GetEvent().GetCreated().GetSession(); s != nil {
		f.edges[id] = [2]int64{s.GetId(), s.GetParentSessionId()}
	}
	return &lifecyclev1.ConsumeSessionEventResponse{Applied: true}, nil
}

func (f *fakeLineage) snapshot() (deliveries int, edges [][2]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.edges {
		edges = append(edges, e)
	}
	return f.deliveries, edges
}

func startFakeLineage(t *testing.T) (*fakeLineage, string) {
	t.Helper()
	f := &fakeLineage{edges: map[string][2]int64{}, applied: map[string]int{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	lifecyclev1.RegisterSessionEventConsumerServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return f, lis.Addr().String()
}

type testBundle struct {
	// client calls with an admin key (conn), as a harness driving the
	// machine (TransitionSession) does; operator with an operator key,
	// which the admin methods refuse; lineage as the lineage service (its
	// event consumer is internal).
	client   lifecyclev1.LifecycleServiceClient
	operator lifecyclev1.LifecycleServiceClient
	conn     *grpc.ClientConn
	lineage  *grpc.ClientConn
	svc      *service.Service
}

func setup(t *testing.T, lineageAddr string) testBundle {
	t.Helper()
	consumers := map[string]string{}
	if lineageAddr != "" {
		consumers["lineage"] = lineageAddr
	}
	cfg := config.Config{
		Config: host.Config{
			GRPCAddr:    "127.0.0.1:0",
			DatabaseURL: pgtest.NewDatabase(t, service.MigrationSets...),
			// The credentials make run wires: an operator key, an
			// admin key and the services' internal token.
			APIKeys:       servicetest.OperatorKey,
			AdminAPIKeys:  servicetest.AdminKey,
			InternalToken: servicetest.InternalToken,
		},
		EffectConsumers:   consumers,
		RelayPollInterval: 50 * time.Millisecond,
	}
	svc, err := service.New(context.Background(), cfg, slogx.Discard())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		svc.Close()
	})
	conn := servicetest.DialAdmin(t, svc.Addr())
	return testBundle{
		client: lifecyclev1.NewLifecycleServiceClient(conn), conn: conn, svc: svc,
		operator: lifecyclev1.NewLifecycleServiceClient(servicetest.DialOperator(t, svc.Addr())),
		lineage:  servicetest.DialAsService(t, svc.Addr(), "lineage"),
	}
}

func TestServesHealthAndRequiresKey(t *testing.T) {
	t.Parallel()
	b := setup(t, "")

	require.Eventually(t, func() bool {
		resp, err := healthpb.NewHealthClient(b.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, 5*time.Second, 20*time.Millisecond)

	for _, id := range []grpcclient.Identity{grpcclient.Anonymous(), grpcclient.WithKey("wrong")} {
		conn, err := grpcclient.Dial(b.svc.Addr(), id)
		require.NoError(t, err)
		_, err = lifecyclev1.NewLifecycleServiceClient(conn).ListSessions(context.Background(), &lifecyclev1.ListSessionsRequest{})
		require.Equal(t, codes.Unauthenticated, status.Code(err), "identity %v", id)
		resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
		require.NoError(t, err, "health is open")
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
		conn.Close()
	}
}

func TestCreateGetListOverGRPC(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()

	md, err := structpb.NewStruct(map[string]any{"router_session_id": 1, "tags": []any{"a"}})
	require.NoError(t, err)
	created, err := b.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{
		Prompt: "do it", GitRoot: "git@example.com:acme/app.git", Title: "Do it", Slug: "do-it",
		AgentRoot: "zimmer", CustomMetadata: md,
	})
	require.NoError(t, err)
	s := created.GetSession()
	require.Equal(t, "waiting", s.GetStatus())
	require.Equal(t, "api", s.GetGenesis())
	require.Equal(t, "priority", s.GetSchedulingClass())
	require.Nil(t, s.ParentSessionId)
	require.Equal(t, []any{"a"}, s.GetCustomMetadata().AsMap()["tags"])

	child, err := b.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "sub", GitRoot: "g", ParentSessionId: &s.Id})
	require.NoError(t, err)
	require.Equal(t, s.GetId(), child.GetSession().GetParentSessionId())

	for _, ref := range []string{"do-it", "1"} {
		got, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: ref})
		require.NoError(t, err)
		require.Equal(t, s.GetId(), got.GetSession().GetId())
	}

	list, err := b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{Status: []string{"waiting"}, PerPage: 1})
	require.NoError(t, err)
	require.Len(t, list.GetSessions(), 1)
	require.Equal(t, child.GetSession().GetId(), list.GetSessions()[0].GetId())
	require.EqualValues(t, 2, list.GetPagination().GetTotalCount())
	require.EqualValues(t, 2, list.GetPagination().GetTotalPages())
}

func TestBadInputNamesTheFieldAndWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ctx := context.Background()
	unknown := int64(77)

	tests := []struct {
		name   string
		req    *lifecyclev1.CreateSessionRequest
		code   codes.Code
		fields []string
	}{
		// prompt is optional since issue 9 (item 9); git_root stays required.
		{"missing git_root", &lifecyclev1.CreateSessionRequest{}, codes.InvalidArgument, []string{"git_root"}},
		{"blank git_root", &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "   "}, codes.InvalidArgument, []string{"git_root"}},
		{"NUL in title and branch", &lifecyclev1.CreateSessionRequest{GitRoot: "g", Title: "a\x00", Branch: "\x00"}, codes.InvalidArgument, []string{"branch", "title"}},
		{"git_root too long", &lifecyclev1.CreateSessionRequest{GitRoot: strings.Repeat("g", 2_049)}, codes.InvalidArgument, []string{"git_root"}},
		{"metadata too deep", &lifecyclev1.CreateSessionRequest{GitRoot: "g", CustomMetadata: deepStruct(t, 33)}, codes.InvalidArgument, []string{"custom_metadata"}},
		{"NUL in a metadata key", &lifecyclev1.CreateSessionRequest{GitRoot: "g", CustomMetadata: mustStruct(t, map[string]any{"k\x00": 1})}, codes.InvalidArgument, []string{"custom_metadata"}},
		{"prompt too long", &lifecyclev1.CreateSessionRequest{Prompt: strings.Repeat("x", 500_001), GitRoot: "g"}, codes.InvalidArgument, []string{"prompt"}},
		{"unknown parent", &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "g", ParentSessionId: &unknown}, codes.InvalidArgument, []string{"parent_session_id"}},
	}
	for _, tt := range tests {
		_, err := b.client.CreateSession(ctx, tt.req)
		st := status.Convert(err)
		require.Equal(t, tt.code, st.Code(), tt.name)
		var fields []string
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok {
				for _, v := range br.GetFieldViolations() {
					fields = append(fields, v.GetField())
					require.Contains(t, st.Message(), v.GetField(), tt.name)
				}
			}
		}
		require.Equal(t, tt.fields, fields, tt.name)
	}
	_, err := b.client.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: "9"})
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{Status: []string{"sleeping"}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))

	list, err := b.client.ListSessions(ctx, &lifecyclev1.ListSessionsRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetSessions(), "nothing was written")
}

func TestCreatedEventReachesLineageExactlyOnceAcrossRelayCrash(t *testing.T) {
	t.Parallel()
	lineage, addr := startFakeLineage(t)
	b := setup(t, addr)
	ctx := context.Background()

	parent, err := b.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	pid := parent.GetSession().GetId()
	child, err := b.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "c", GitRoot: "g", ParentSessionId: &pid})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		_, edges := lineage.snapshot()
		return len(edges) == 2
	}, 10*time.Second, 20*time.Millisecond)
	_, edges := lineage.snapshot()
	require.Contains(t, edges, [2]int64{child.GetSession().GetId(), pid})

	// Once both are acknowledged (an acknowledgement landing after the
	// reset below would mark its row delivered again), redeliver
	// everything, as a relay that crashed after handing off but before
	// recording would: the consumer still holds each edge once.
	require.Eventually(t, func() bool {
		var pending int
		require.NoError(t, b.svc.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox_messages WHERE subscriber = 'lineage' AND delivered_at IS NULL`).Scan(&pending))
		return pending == 0
	}, 10*time.Second, 20*time.Millisecond)
	_, err = b.svc.Pool.Exec(ctx, `UPDATE outbox_messages SET delivered_at = NULL`)
	require.NoError(t, err)
	// The running relay (or this direct round, whichever claims first)
	// delivers both again.
	_, err = b.svc.Relays["lineage"].DeliverPending(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		deliveries, _ := lineage.snapshot()
		return deliveries >= 4
	}, 10*time.Second, 20*time.Millisecond)
	_, edges = lineage.snapshot()
	require.Len(t, edges, 2)
}

// TestEveryTransitionEventIsDeliveredExactlyOnceAcrossRelayRestart stops
// the relay with transitions committed but undelivered, restarts it, and
// checks the idempotent consumer applied each event exactly once.
func TestEveryTransitionEventIsDeliveredExactlyOnceAcrossRelayRestart(t *testing.T) {
	t.Parallel()
	lineage, addr := startFakeLineage(t)
	lineage.fail = true // delivery stops between commit and hand-off
	b := setup(t, addr)
	ctx := context.Background()

	resp, err := b.client.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	id := resp.GetSession().GetId()
	for _, ev := range []string{"start", "pause", "resume", "block_on_elicitation", "unblock_from_elicitation", "fail", "archive", "unarchive_to_failed"} {
		_, err := b.client.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(id), Event: ev})
		require.NoError(t, err, ev)
	}
	var events int
	require.NoError(t, b.svc.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox_messages WHERE subscriber = 'lineage' AND delivered_at IS NULL`).Scan(&events))
	require.Equal(t, 9, events, "one created and one updated per transition, all pending")

	lineage.mu.Lock()
	lineage.fail = false
	lineage.mu.Unlock()
	// Once delivered, forget it all, as a relay that crashed before recording
	// would: everything is handed over a second time.
	require.Eventually(t, func() bool {
		var pending int
		require.NoError(t, b.svc.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox_messages WHERE subscriber = 'lineage' AND delivered_at IS NULL`).Scan(&pending))
		return pending == 0
	}, 30*time.Second, 20*time.Millisecond)
	_, err = b.svc.Pool.Exec(ctx, `UPDATE outbox_messages SET delivered_at = NULL, next_attempt_at = now() WHERE subscriber = 'lineage'`)
	require.NoError(t, err)
	_, err = b.svc.Relays["lineage"].DeliverPending(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var pending int
		require.NoError(t, b.svc.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox_messages WHERE subscriber = 'lineage' AND delivered_at IS NULL`).Scan(&pending))
		return pending == 0
	}, 30*time.Second, 20*time.Millisecond)

	lineage.mu.Lock()
	defer lineage.mu.Unlock()
	require.Len(t, lineage.applied, 9)
	for id, n := range lineage.applied {
		require.Equal(t, 1, n, id)
	}
}

// TestWorkerPollsAndSchedulesOutboxRetention: with Temporal, the service's
// worker answers on zimmer-lifecycle and the retention schedule
// (lifecycle-outbox-retention) prunes on that queue with the configured
// retention.
func TestWorkerPollsAndSchedulesOutboxRetention(t *testing.T) {
	t.Parallel()
	temporalAddr := servicetest.TemporalAddress(t)
	cfg := config.Config{
		Config:          servicetest.Config(t, service.MigrationSets...),
		OutboxRetention: 24 * time.Hour,
	}
	cfg.TemporalAddress = temporalAddr
	svc := servicetest.New(t, service.New, cfg)
	servicetest.AssertWorkerPolls(t, svc.Host, service.Name)

	desc, err := svc.Temporal.ScheduleClient().GetHandle(t.Context(), retention.ScheduleID(service.Name, "outbox")).Describe(t.Context())
	require.NoError(t, err)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, temporalx.TaskQueue(service.Name), action.TaskQueue)
	require.Equal(t, retention.WorkflowName(service.Name, "outbox"), action.Workflow)
	require.Equal(t, time.Hour, desc.Schedule.Spec.Intervals[0].Every)
}
