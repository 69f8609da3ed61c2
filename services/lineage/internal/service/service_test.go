package service_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/lineage/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// lineageClient is lineage's gRPC surface as its callers use it: the
// LineageService, and the SessionEventConsumerService lifecycle delivers
// its events through.
type lineageClient struct {
	lineagev1.LineageServiceClient
	lifecyclev1.SessionEventConsumerServiceClient
}

func newLineageClient(conn grpc.ClientConnInterface) lineageClient {
	return lineageClient{lineagev1.NewLineageServiceClient(conn), lifecyclev1.NewSessionEventConsumerServiceClient(conn)}
}

// setup runs the whole service on a fresh database, without Temporal, and
// returns a client of its real gRPC server calling as lifecycle, the
// service that delivers its events.
func setup(t *testing.T) lineageClient {
	t.Helper()
	svc := servicetest.New(t, service.New, servicetest.Config(t, service.MigrationSets...))
	servicetest.RunInBackground(t, svc.Run)
	return newLineageClient(servicetest.DialAsService(t, svc.Addr(), "lifecycle"))
}

// The service serves its API, owns its schema and stops cleanly.
func TestServiceServesUntilCancelled(t *testing.T) {
	t.Parallel()
	svc := servicetest.New(t, service.New, servicetest.Config(t, service.MigrationSets...))
	servicetest.AssertServesUntilCancelled(t, svc.Host, "zimmer.lineage.v1.LineageService", "session_nodes")
}

func TestServiceWorkerPollsItsTaskQueue(t *testing.T) {
	t.Parallel()
	temporalAddr := servicetest.TemporalAddress(t)
	cfg := servicetest.Config(t, service.MigrationSets...)
	cfg.TemporalAddress = temporalAddr
	servicetest.AssertWorkerPolls(t, servicetest.New(t, service.New, cfg).Host, "lineage")
}

func created(eventID string, s *lifecyclev1.Session) *lifecyclev1.ConsumeSessionEventRequest {
	if s.UpdatedAt == nil {
		s.UpdatedAt = timestamppb.New(time.Unix(1_700_000_000, 0))
	}
	return &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
		EventId: eventID, SessionId: s.GetId(), OccurredAt: s.UpdatedAt,
		Payload: &lifecyclev1.SessionEvent_Created{Created: &lifecyclev1.SessionCreated{Session: s}},
	}}
}

func TestSessionNodeFromEvents(t *testing.T) {
	t.Parallel()
	client := setup(t)
	ctx := t.Context()

	// A router and two workers: one records the edge in parent_session_id,
	// the other (spawned before that column existed) in custom_metadata.
	legacy, err := structpb.NewStruct(map[string]any{"router_session_id": 101})
	require.NoError(t, err)
	parent := int64(101)
	events := []*lifecyclev1.ConsumeSessionEventRequest{
		created("5b0e7a4e-0000-4000-8000-000000000103", &lifecyclev1.Session{Id: 103, Title: "helper", CustomMetadata: legacy}),
		created("5b0e7a4e-0000-4000-8000-000000000101", &lifecyclev1.Session{
			Id: 101, Title: "Add spot vs priority classification", AgentRoot: "zimmer-router",
			Status: "running", Genesis: "web_ui", SchedulingClass: "priority",
		}),
		created("5b0e7a4e-0000-4000-8000-000000000102", &lifecyclev1.Session{Id: 102, Title: "Implement the genesis column", ParentSessionId: &parent}),
	}
	for _, e := range events {
		resp, err := client.ConsumeSessionEvent(ctx, e)
		require.NoError(t, err)
		require.True(t, resp.GetApplied())
	}
	resp, err := client.ConsumeSessionEvent(ctx, events[0])
	require.NoError(t, err)
	require.False(t, resp.GetApplied(), "a redelivery is recognised")

	got, err := client.GetSessionNode(ctx, &lineagev1.GetSessionNodeRequest{SessionId: 101})
	require.NoError(t, err)
	node := got.GetNode()
	require.Equal(t, int64(101), node.GetSessionId())
	require.Nil(t, node.SpawnParentId)
	require.Equal(t, []int64{102, 103}, node.GetSpawnChildIds(), "children by column and by metadata, in id order")
	require.Equal(t, "Add spot vs priority classification", node.GetTitle())
	require.Equal(t, "zimmer-router", node.GetAgentRoot())
	require.Equal(t, "running", node.GetStatus())
	require.Equal(t, "web_ui", node.GetGenesis())
	require.Equal(t, "priority", node.GetSchedulingClass())

	got, err = client.GetSessionNode(ctx, &lineagev1.GetSessionNodeRequest{SessionId: 103})
	require.NoError(t, err)
	require.Equal(t, int64(101), got.GetNode().GetSpawnParentId())
}

func TestConcurrentRedeliveryAppliesOnce(t *testing.T) {
	t.Parallel()
	client := setup(t)
	ctx := t.Context()

	req := created("9d7c3b1a-0000-4000-8000-000000000001", &lifecyclev1.Session{Id: 7, Title: "once"})
	const deliveries = 20
	var applied atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range deliveries {
		wg.Go(func() {
			<-start
			resp, err := client.ConsumeSessionEvent(ctx, req)
			if !assert.NoError(t, err) { // require must not be called off the test goroutine
				return
			}
			if resp.GetApplied() {
				applied.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	require.Equal(t, int32(1), applied.Load(), "exactly one delivery applies")

	got, err := client.GetSessionNode(ctx, &lineagev1.GetSessionNodeRequest{SessionId: 7})
	require.NoError(t, err)
	require.Equal(t, "once", got.GetNode().GetTitle())
}

func TestErrorsThroughGRPC(t *testing.T) {
	t.Parallel()
	client := setup(t)
	ctx := t.Context()

	_, err := client.GetSessionNode(ctx, &lineagev1.GetSessionNodeRequest{SessionId: 42})
	require.Equal(t, codes.NotFound, status.Code(err))
	require.Equal(t, "session 42 is not known to lineage yet", status.Convert(err).Message())

	_, err = client.ConsumeSessionEvent(ctx, created("", &lifecyclev1.Session{Id: 1}))
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "event.event_id")

	_, err = client.ConsumeSessionEvent(ctx, &lifecyclev1.ConsumeSessionEventRequest{Event: &lifecyclev1.SessionEvent{
		EventId: "9d7c3b1a-0000-4000-8000-000000000002", SessionId: 1,
	}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "event.payload")
}
