package service_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/periodic"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// sweepService runs lifecycle with Temporal in a namespace of the test's
// own, so the sweeps' schedules (one id per service) meet no other test's.
func sweepService(t *testing.T, cfg config.Config) *service.Service {
	t.Helper()
	addr := servicetest.TemporalAddress(t)
	cfg.Config = servicetest.Config(t, service.MigrationSets...)
	cfg.TemporalAddress = addr
	cfg.TemporalNamespace = servicetest.TemporalNamespace(t, addr)
	cfg.OutboxRetention = 24 * time.Hour
	svc := servicetest.New(t, service.New, cfg)
	servicetest.AssertWorkerPolls(t, svc.Host, service.Name)
	return svc
}

// requireSchedule describes the schedule id and checks it runs the named
// sweep's workflow on lifecycle's task queue every interval, returning its
// handle.
func requireSchedule(t *testing.T, svc *service.Service, id, sweep string, every time.Duration) client.ScheduleHandle {
	t.Helper()
	handle := svc.Temporal.ScheduleClient().GetHandle(t.Context(), id)
	desc, err := handle.Describe(t.Context())
	require.NoError(t, err)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, temporalx.TaskQueue(service.Name), action.TaskQueue)
	require.Equal(t, periodic.SweepWorkflowName(service.Name, sweep), action.Workflow)
	require.Equal(t, every, desc.Schedule.Spec.Intervals[0].Every)
	return handle
}

// TestStaleSessionsScheduleArchivesThroughTemporal: lifecycle-stale-sessions
// runs every LIFECYCLE_STALE_SWEEP_INTERVAL; a run (triggered, as an
// operator would from the Web UI) archives a session untouched for
// LIFECYCLE_STALE_AFTER, its line naming that age.
func TestStaleSessionsScheduleArchivesThroughTemporal(t *testing.T) {
	t.Parallel()
	svc := sweepService(t, config.Config{StaleSweepInterval: 2 * time.Hour, StaleAfter: time.Second})
	handle := requireSchedule(t, svc, "lifecycle-stale-sessions", "stale-sessions", 2*time.Hour)

	s, err := svc.Sessions.Create.Handle(t.Context(), domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	time.Sleep(1100 * time.Millisecond) // untouched for longer than LIFECYCLE_STALE_AFTER
	require.NoError(t, handle.Trigger(t.Context(), client.ScheduleTriggerOptions{}))

	ref := strconv.FormatInt(s.ID, 10)
	require.Eventually(t, func() bool {
		got, err := svc.Sessions.Get.Handle(t.Context(), ref)
		require.NoError(t, err)
		return got.Status == domain.StatusArchived
	}, servicetest.Timeout, 100*time.Millisecond)
	lines, err := svc.Sessions.History.Timeline(t.Context(), ref)
	require.NoError(t, err)
	var archive []string
	for _, l := range lines {
		if strings.Contains(l.Message, "Session moved to trash") {
			archive = append(archive, l.Message)
		}
	}
	require.Equal(t, []string{"[State Machine] Session moved to trash by Zimmer's stale-session sweep (untouched for 1s)"}, archive)
}

// TestExpiredElicitationsScheduleClearsThroughTemporal:
// lifecycle-expired-elicitations runs every
// LIFECYCLE_ELICITATION_SWEEP_INTERVAL; a triggered run clears a block
// older than LIFECYCLE_ELICITATION_EXPIRY, leaving the session needs_input
// with lost_elicitation.
func TestExpiredElicitationsScheduleClearsThroughTemporal(t *testing.T) {
	t.Parallel()
	svc := sweepService(t, config.Config{ElicitationSweepInterval: time.Minute, ElicitationExpiry: time.Second})
	handle := requireSchedule(t, svc, "lifecycle-expired-elicitations", "expired-elicitations", time.Minute)

	s, err := svc.Sessions.Create.Handle(t.Context(), domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	ref := strconv.FormatInt(s.ID, 10)
	for _, e := range []domain.Event{domain.EventStart, domain.EventBlockOnElicitation} {
		_, err := svc.Sessions.Transition.Fire(t.Context(), ref, string(e), domain.Command{RunningJobID: "job"})
		require.NoError(t, err)
	}
	time.Sleep(1100 * time.Millisecond) // blocked for longer than LIFECYCLE_ELICITATION_EXPIRY
	require.NoError(t, handle.Trigger(t.Context(), client.ScheduleTriggerOptions{}))

	require.Eventually(t, func() bool {
		got, err := svc.Sessions.Get.Handle(t.Context(), ref)
		require.NoError(t, err)
		return !got.Markers.BlockedOnElicitation
	}, servicetest.Timeout, 100*time.Millisecond)
	got, err := svc.Sessions.Get.Handle(t.Context(), ref)
	require.NoError(t, err)
	require.Equal(t, domain.StatusNeedsInput, got.Status)
	require.NotNil(t, got.Markers.LostElicitation)
	require.Equal(t, domain.LostStranded, got.Markers.LostElicitation.Reason, "the sweep's banner: the round-trip is gone")
}

// TestSweepSchedulesDefaultToTheSpec: with nothing configured, the stale
// sweep runs hourly, the expired-elicitation sweep every 5 minutes and the
// heartbeat every 30 s.
func TestSweepSchedulesDefaultToTheSpec(t *testing.T) {
	t.Parallel()
	svc := sweepService(t, config.Config{})
	requireSchedule(t, svc, "lifecycle-stale-sessions", "stale-sessions", time.Hour)
	requireSchedule(t, svc, "lifecycle-expired-elicitations", "expired-elicitations", 5*time.Minute)
	requireSchedule(t, svc, "lifecycle-heartbeat", "heartbeat", 30*time.Second)
}

// listingQueue is a queue whose ListEnqueuedMessages answers from a table
// of session → message statuses.
type listingQueue struct {
	queuev1.UnimplementedQueueServiceServer
	mu       sync.Mutex
	statuses map[string][]string
}

func (q *listingQueue) ListEnqueuedMessages(_ context.Context, req *queuev1.ListEnqueuedMessagesRequest) (*queuev1.ListEnqueuedMessagesResponse, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	resp := &queuev1.ListEnqueuedMessagesResponse{}
	for _, st := range q.statuses[req.GetSessionId()] {
		resp.EnqueuedMessages = append(resp.EnqueuedMessages, &queuev1.EnqueuedMessage{Status: st})
	}
	return resp, nil
}

func (q *listingQueue) set(sessionID int64, statuses ...string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.statuses[strconv.FormatInt(sessionID, 10)] = statuses
}

// TestHeartbeatScheduleAsksTheQueueThroughTemporal: lifecycle-heartbeat
// runs every LIFECYCLE_HEARTBEAT_SWEEP_INTERVAL; a triggered run asks the
// queue (ListEnqueuedMessages, as lifecycle) and nudges the resting session
// whose queue holds only delivered messages, not the one holding a pending
// message.
func TestHeartbeatScheduleAsksTheQueueThroughTemporal(t *testing.T) {
	t.Parallel()
	q := &listingQueue{statuses: map[string][]string{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	queuev1.RegisterQueueServiceServer(srv, q)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	svc := sweepService(t, config.Config{HeartbeatSweepInterval: time.Hour, QueueAddr: lis.Addr().String(), QueueTimeout: 5 * time.Second})
	handle := requireSchedule(t, svc, "lifecycle-heartbeat", "heartbeat", time.Hour)

	resting := func() int64 {
		s, err := svc.Sessions.Create.Handle(t.Context(), domain.NewSession{Prompt: "p", GitRoot: "g"})
		require.NoError(t, err)
		ref := strconv.FormatInt(s.ID, 10)
		for _, e := range []domain.Event{domain.EventStart, domain.EventPause} {
			_, err := svc.Sessions.Transition.Fire(t.Context(), ref, string(e), domain.Command{RunningJobID: "job"})
			require.NoError(t, err)
		}
		_, err = svc.Pool.Exec(t.Context(), `UPDATE sessions SET heartbeat_enabled = true, updated_at = now() - interval '1 hour' WHERE id = $1`, s.ID)
		require.NoError(t, err)
		return s.ID
	}
	idle, holding := resting(), resting()
	q.set(idle, "sent", "undelivered")
	q.set(holding, "sent", "pending")
	require.NoError(t, handle.Trigger(t.Context(), client.ScheduleTriggerOptions{}))

	status := func(id int64) domain.Status {
		got, err := svc.Sessions.Get.Handle(t.Context(), strconv.FormatInt(id, 10))
		require.NoError(t, err)
		return got.Status
	}
	require.Eventually(t, func() bool { return status(idle) == domain.StatusRunning }, servicetest.Timeout, 100*time.Millisecond)
	require.Equal(t, domain.StatusNeedsInput, status(holding), "a pending message is about to be delivered: no nudge")
}
