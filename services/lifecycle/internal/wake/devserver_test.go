package wake_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/clients"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wake"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// fakeQueue answers FollowUp as an idle session's queue does, recording
// each call and when it came.
type fakeQueue struct {
	queuev1.UnimplementedQueueServiceServer
	mu    sync.Mutex
	calls []followUp
}

type followUp struct {
	req *queuev1.FollowUpRequest
	at  time.Time
}

func (f *fakeQueue) FollowUp(_ context.Context, req *queuev1.FollowUpRequest) (*queuev1.FollowUpResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, followUp{req, time.Now()})
	return &queuev1.FollowUpResponse{Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, JobId: "job"}, nil
}

func (f *fakeQueue) recorded() []followUp {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]followUp(nil), f.calls...)
}

func startFakeQueue(t *testing.T) (*fakeQueue, queuev1.QueueServiceClient) {
	t.Helper()
	f := &fakeQueue{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	queuev1.RegisterQueueServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return f, queuev1.NewQueueServiceClient(conn)
}

// TestAWakeFiresOnTheDevServer arms a wake 2 s ahead (armed by a clock 28 s
// behind, which the grace window allows), and sees the Wake workflow,
// started from the arming's outbox event by the in-process relay, fire it
// through the queue's FollowUp once, not early, under the trigger's key. A
// redelivery of the event starts nothing more.
func TestAWakeFiresOnTheDevServer(t *testing.T) {
	t.Parallel()
	addr := servicetest.TemporalAddress(t)
	ns := servicetest.TemporalNamespace(t, addr)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	logger := slogx.Discard()

	c, err := temporalx.Dial(ctx, addr, ns, logger)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	w := temporalx.NewWorker(c, "lifecycle")

	pool := pgtest.DB(t, inbox.Migrations, outbox.Migrations, store.Migrations)
	signal := &outbox.Signal{}
	repo := store.NewSessions(pool, events.Codec{}, signal, logger)
	armedBy := clock.NewStub(time.Now().UTC().Add(-28 * time.Second))
	sessions := app.NewSessions(repo, armedBy, app.DefaultTrashRetention)
	queue, queueClient := startFakeQueue(t)
	starter, err := wake.Install(c, w, "lifecycle", app.FireTrigger{
		Repo: repo, Clock: clock.System{}, Delivery: clients.Queue{Client: queueClient, Timeout: 5 * time.Second},
	})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	relay := &outbox.Relay{Pool: pool, Subscriber: events.SubscriberTriggers, Deliver: starter.Deliver, Signal: signal,
		Logger: logger, PollInterval: 50 * time.Millisecond}
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-relayDone) })

	s, err := sessions.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	ref := strconv.FormatInt(s.ID, 10)
	for _, e := range []domain.Event{domain.EventStart, domain.EventPause} {
		_, err := sessions.Transition.Fire(ctx, ref, string(e), domain.Command{})
		require.NoError(t, err)
	}
	a, err := app.NewTriggers(repo, sessions).WakeMeUpLater(ctx, ref, domain.WakeRequest{Delay: "30s", Prompt: "wake up"}, domain.Actor{})
	require.NoError(t, err)
	require.Equal(t, domain.StatusWaiting, a.Session.Status)
	fireAt := a.Trigger.FireAt
	require.WithinDuration(t, time.Now().Add(2*time.Second), fireAt, time.Second)

	require.Eventually(t, func() bool { return len(queue.recorded()) > 0 }, 20*time.Second, 50*time.Millisecond, "the wake fired")
	got := queue.recorded()[0]
	require.False(t, got.at.Before(fireAt), "never early: fired at %s for %s", got.at, fireAt)
	require.Equal(t, ref, got.req.GetSessionId())
	require.Equal(t, "wake up", got.req.GetPrompt())
	require.Equal(t, "trigger/"+strconv.FormatInt(a.Trigger.ID, 10), got.req.GetIdempotencyKey())

	wid := wake.WorkflowID(s.ID, a.Trigger.ID)
	require.Eventually(t, func() bool {
		d, err := c.DescribeWorkflow(ctx, wid, "")
		return err == nil && d.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, 10*time.Second, 50*time.Millisecond)
	var st string
	require.NoError(t, pool.QueryRow(ctx, `SELECT status FROM wake_triggers WHERE id = $1`, a.Trigger.ID).Scan(&st))
	require.Equal(t, "fired", st)

	// The arming's event again (a crash before its acknowledgement): no
	// second workflow, no second delivery.
	var payload []byte
	require.NoError(t, pool.QueryRow(ctx, `SELECT payload FROM outbox_messages WHERE topic = $1`, events.TopicTriggerArmed).Scan(&payload))
	require.NoError(t, starter.Deliver(ctx, outbox.Message{Event: outbox.Event{ID: "again", Topic: events.TopicTriggerArmed, Payload: payload}}))
	time.Sleep(500 * time.Millisecond)
	require.Len(t, queue.recorded(), 1, "one wake, one delivery")
}
