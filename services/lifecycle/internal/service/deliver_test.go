package service_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/config"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/retention"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// queue is lifecycle's client as the queue service calls it: DeliverTurn
// and RecordDrainAttempt are internal.
func (b testBundle) queue(t *testing.T) lifecyclev1.LifecycleServiceClient {
	t.Helper()
	return lifecyclev1.NewLifecycleServiceClient(servicetest.DialAsService(t, b.svc.Addr(), "queue"))
}

func idle(req *lifecyclev1.DeliverTurnRequest) *lifecyclev1.DeliverTurnRequest {
	if req.Mode == lifecyclev1.DeliveryMode_DELIVERY_MODE_UNSPECIFIED {
		req.Mode = lifecyclev1.DeliveryMode_DELIVERY_MODE_IDLE
	}
	if req.Prompt == "" {
		req.Prompt = "rebase on main"
	}
	return req
}

// turnRequests are the turn requests lifecycle addressed to runner_turns
// for session id, oldest first (an announcement that asks for no turn is
// left out).
func (b testBundle) turnRequests(t *testing.T, id int64) []*lifecyclev1.TurnRequest {
	t.Helper()
	rows, err := b.svc.Pool.Query(context.Background(), `SELECT payload FROM outbox_messages
		WHERE subscriber = 'runner_turns' AND topic = $1 AND aggregate_key = $2 ORDER BY id`,
		events.TopicSessionUpdated, fmt.Sprint(id))
	require.NoError(t, err)
	defer rows.Close()
	var out []*lifecyclev1.TurnRequest
	for rows.Next() {
		var payload []byte
		require.NoError(t, rows.Scan(&payload))
		evt, err := events.Decode(payload)
		require.NoError(t, err)
		if turn := evt.GetUpdated().GetTurn(); turn != nil {
			out = append(out, turn)
		}
	}
	require.NoError(t, rows.Err())
	return out
}

func (b testBundle) get(t *testing.T, id int64) *lifecyclev1.Session {
	t.Helper()
	resp, err := b.client.GetSession(context.Background(), &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(id)})
	require.NoError(t, err)
	return resp.GetSession()
}

func (b testBundle) needsInput(t *testing.T) int64 {
	t.Helper()
	id := b.running(t)
	_, err := b.fire(t, id, "pause")
	require.NoError(t, err)
	return id
}

// TestDeliverTurnToAnIdleSessionResumesItOnce: an idle delivery is a
// resume under a job lifecycle draws, sets the goal, says on the timeline
// what it delivered and who asked, and asks the runner for the turn with
// its prompt. The same delivery id again — at once, or after the turn has
// moved on — answers the first delivery and changes nothing.
func TestDeliverTurnToAnIdleSessionResumesItOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	q := b.queue(t)
	ctx := t.Context()
	id := b.needsInput(t)

	resp, err := q.DeliverTurn(ctx, idle(&lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: "queue/message/12",
		Goal: "green CI", What: "queued message #12", Automatic: true}))
	require.NoError(t, err)
	require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED, resp.GetRefusal())
	require.False(t, resp.GetAlreadyDelivered())
	job := resp.GetJobId()
	require.Regexp(t, `^delivery/[0-9a-f-]{36}$`, job)
	require.Equal(t, "running", resp.GetSession().GetStatus())
	require.Equal(t, job, resp.GetSession().GetRunningJobId())
	require.Equal(t, "green CI", resp.GetSession().GetGoal())
	require.Equal(t, resp.GetSession().GetVersion(), b.get(t, id).GetVersion(), "the answer is the session as committed")

	lines := b.timeline(t, id)
	require.Equal(t, "[State Machine] needs_input → running (resume) (by the queue)", lines[len(lines)-2].GetMessage())
	require.Equal(t, "note", lines[len(lines)-1].GetKind())
	require.Equal(t, "[Queue] delivered queued message #12 as the next turn; it set the session's goal (by the queue)", lines[len(lines)-1].GetMessage())

	turns := b.turnRequests(t, id)
	require.Len(t, turns, 1)
	require.Equal(t, job, turns[0].GetJobId())
	require.Equal(t, "rebase on main", turns[0].GetPrompt(), "the runner runs the prompt under the job")

	// A retry of the same delivery changes nothing and answers the first.
	before := b.get(t, id)
	again, err := q.DeliverTurn(ctx, idle(&lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: "queue/message/12", What: "queued message #12"}))
	require.NoError(t, err)
	require.True(t, again.GetAlreadyDelivered())
	require.Equal(t, job, again.GetJobId())
	require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED, again.GetRefusal())
	require.Equal(t, before.GetVersion(), b.get(t, id).GetVersion())
	require.Len(t, b.timeline(t, id), len(lines))
	require.Len(t, b.turnRequests(t, id), 1)

	// The turn moves on: the session is idle again, and the retry still
	// answers the first delivery rather than delivering it twice.
	_, err = b.fire(t, id, "pause")
	require.NoError(t, err)
	late, err := q.DeliverTurn(ctx, idle(&lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: "queue/message/12"}))
	require.NoError(t, err)
	require.True(t, late.GetAlreadyDelivered())
	require.Equal(t, job, late.GetJobId())
	require.Equal(t, "needs_input", late.GetSession().GetStatus())
	require.Equal(t, "needs_input", b.get(t, id).GetStatus())
	require.Len(t, b.turnRequests(t, id), 1)

	// A delivery id names one delivery: another session cannot reuse it.
	other := b.needsInput(t)
	_, err = q.DeliverTurn(ctx, idle(&lifecyclev1.DeliverTurnRequest{SessionId: other, DeliveryId: "queue/message/12"}))
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	require.Equal(t, "needs_input", b.get(t, other).GetStatus())
}

// TestHandoverAndAfterInterruptDeliveries: a running session's turn is
// replaced in place. A handover comes only from the turn that ended and
// asks the runner for nothing; after an interrupt the runner is asked for
// the turn, prompt included.
func TestHandoverAndAfterInterruptDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	q := b.queue(t)
	ctx := t.Context()
	id := b.running(t) // its job: session-x/turn-1
	before := b.get(t, id)

	stale, err := q.DeliverTurn(ctx, &lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: "queue/message/1", Prompt: "next",
		Mode: lifecyclev1.DeliveryMode_DELIVERY_MODE_HANDOVER, FromJobId: "session-x/turn-0", Automatic: true})
	require.NoError(t, err)
	require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY, stale.GetRefusal(), "a turn that is not the running one hands nothing over")
	require.Contains(t, stale.GetMessage(), `"session-x/turn-1"`)
	require.Empty(t, stale.GetJobId())
	require.Equal(t, before.GetVersion(), b.get(t, id).GetVersion(), "a refusal writes nothing")

	handed, err := q.DeliverTurn(ctx, &lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: "queue/message/1", Prompt: "next",
		Mode: lifecyclev1.DeliveryMode_DELIVERY_MODE_HANDOVER, FromJobId: "session-x/turn-1", Automatic: true, What: "queued message #1"})
	require.NoError(t, err)
	require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED, handed.GetRefusal())
	s := handed.GetSession()
	require.Equal(t, "running", s.GetStatus(), "no pause: no needs_input flap")
	require.Equal(t, handed.GetJobId(), s.GetRunningJobId())
	require.NotEqual(t, "session-x/turn-1", s.GetRunningJobId())
	require.Equal(t, before.GetNeedsInputCount(), s.GetNeedsInputCount(), "no needs-input push")
	require.Empty(t, b.turnRequests(t, id), "the runner that handed over runs the prompt itself")
	var names []string
	for _, e := range b.events(t, id) {
		names = append(names, e.GetName())
	}
	require.NotContains(t, names, "fire_ao_event_triggers", "no session_needs_input trigger")
	require.Equal(t, "[Queue] delivered queued message #1 as the next turn (handed over as turn session-x/turn-1 ended) (by the queue)",
		last(b.timeline(t, id)).GetMessage())

	// The interrupt path: the queue halted the turn, the session is still
	// running, and the runner is asked for the new turn.
	interrupted, err := q.DeliverTurn(ctx, &lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: "queue/message/2", Prompt: "stop; do this instead",
		Mode: lifecyclev1.DeliveryMode_DELIVERY_MODE_AFTER_INTERRUPT})
	require.NoError(t, err)
	require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED, interrupted.GetRefusal())
	require.NotEqual(t, handed.GetJobId(), interrupted.GetJobId())
	turns := b.turnRequests(t, id)
	require.Len(t, turns, 1)
	require.Equal(t, interrupted.GetJobId(), turns[0].GetJobId())
	require.Equal(t, "stop; do this instead", turns[0].GetPrompt())

	// Idle deliveries wait for the turn to end; an after-interrupt one
	// needs a running session.
	busy, err := q.DeliverTurn(ctx, idle(&lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: "queue/message/3"}))
	require.NoError(t, err)
	require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY, busy.GetRefusal())
	require.Equal(t, "running", busy.GetSession().GetStatus())
	rest := b.needsInput(t)
	busy, err = q.DeliverTurn(ctx, &lifecyclev1.DeliverTurnRequest{SessionId: rest, DeliveryId: "queue/message/4", Prompt: "p",
		Mode: lifecyclev1.DeliveryMode_DELIVERY_MODE_AFTER_INTERRUPT})
	require.NoError(t, err)
	require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY, busy.GetRefusal())
}

func last(lines []*lifecyclev1.TimelineLine) *lifecyclev1.TimelineLine { return lines[len(lines)-1] }

// TestDeliveryRefusalsAreAnswers: every refusal is an answer naming why,
// with nothing written; the outage and mcp_retry refusals hold only for a
// drain's (automatic) delivery.
func TestDeliveryRefusalsAreAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	q := b.queue(t)
	ctx := t.Context()

	archived := b.create(t, &lifecyclev1.CreateSessionRequest{}).GetId()
	_, err := b.fire(t, archived, "archive")
	require.NoError(t, err)
	failed := b.create(t, &lifecyclev1.CreateSessionRequest{}).GetId()
	_, err = b.fire(t, failed, "fail")
	require.NoError(t, err)
	blocked := b.running(t)
	_, err = b.fire(t, blocked, "block_on_elicitation")
	require.NoError(t, err)
	parked := b.needsInput(t)
	_, err = b.svc.Pool.Exec(ctx, `UPDATE sessions SET markers = markers || '{"auth_outage_reason": "login pool empty"}' WHERE id = $1`, parked)
	require.NoError(t, err)
	retrying := b.running(t)
	_, err = b.fire(t, retrying, "pause", func(r *lifecyclev1.TransitionSessionRequest) { r.PausedBy = "mcp_retry" })
	require.NoError(t, err)

	n := 0
	deliver := func(id int64, automatic bool) *lifecyclev1.DeliverTurnResponse {
		t.Helper()
		n++
		resp, err := q.DeliverTurn(ctx, idle(&lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: fmt.Sprintf("queue/message/%d", n), Automatic: automatic}))
		require.NoError(t, err)
		return resp
	}
	for _, tt := range []struct {
		id        int64
		automatic bool
		want      lifecyclev1.DeliveryRefusal
		words     string
	}{
		{archived, false, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_CLOSED, "is archived"},
		{failed, false, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_CLOSED, "restart it"},
		{blocked, false, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BLOCKED_ON_ELICITATION, "elicitation"},
		{parked, true, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_AUTH_OUTAGE, "login pool empty"},
		{retrying, true, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_MCP_RETRY, "MCP retry"},
	} {
		before := b.get(t, tt.id)
		resp := deliver(tt.id, tt.automatic)
		require.Equal(t, tt.want, resp.GetRefusal(), "session %d", tt.id)
		require.Contains(t, resp.GetMessage(), tt.words)
		require.Empty(t, resp.GetJobId())
		require.Equal(t, before.GetVersion(), b.get(t, tt.id).GetVersion(), "a refusal writes nothing")
		require.Empty(t, b.turnRequests(t, tt.id))
	}
	// A caller's delivery (a follow-up) is not a drain's: the outage park
	// and the mcp_retry pause do not stop it.
	for _, id := range []int64{parked, retrying} {
		resp := deliver(id, false)
		require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED, resp.GetRefusal())
		require.Equal(t, "running", resp.GetSession().GetStatus())
	}
}

// TestDeliverTurnRefusesBadRequestsNamingTheFields and is the services'
// only: an operator key is refused.
func TestDeliverTurnRefusesBadRequestsNamingTheFields(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	q := b.queue(t)
	ctx := t.Context()
	id := b.needsInput(t)

	_, err := q.DeliverTurn(ctx, &lifecyclev1.DeliverTurnRequest{SessionId: id, Prompt: " ", Goal: strings.Repeat("g", 50_001)})
	st := status.Convert(err)
	require.Equal(t, codes.InvalidArgument, st.Code())
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	require.Equal(t, []string{"delivery_id", "prompt", "goal", "mode"}, fields)
	_, err = q.DeliverTurn(ctx, &lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: "d", Prompt: strings.Repeat("p", 500_001),
		Mode: lifecyclev1.DeliveryMode_DELIVERY_MODE_IDLE})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "prompt")
	_, err = q.DeliverTurn(ctx, &lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: "d", Prompt: "p",
		Mode: lifecyclev1.DeliveryMode_DELIVERY_MODE_HANDOVER})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "from_job_id")
	require.Equal(t, "needs_input", b.get(t, id).GetStatus(), "nothing was delivered")

	_, err = q.DeliverTurn(ctx, idle(&lifecyclev1.DeliverTurnRequest{SessionId: 999, DeliveryId: "d"}))
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = b.operator.DeliverTurn(ctx, idle(&lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: "d"}))
	require.Equal(t, codes.PermissionDenied, status.Code(err), "internal: the queue's, not a key's")
	_, err = b.operator.RecordDrainAttempt(ctx, &lifecyclev1.RecordDrainAttemptRequest{SessionId: id})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}

// TestConcurrentIdleDeliveriesDeliverOne: deliveries of different messages
// racing for one idle session queue on its row lock; exactly one makes the
// turn and the others find it running.
func TestConcurrentIdleDeliveriesDeliverOne(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	q := b.queue(t)
	id := b.needsInput(t)

	const racers = 12
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers []*lifecyclev1.DeliverTurnResponse
		errs    []error
	)
	for i := range racers {
		wg.Go(func() {
			resp, err := q.DeliverTurn(context.Background(), idle(&lifecyclev1.DeliverTurnRequest{
				SessionId: id, DeliveryId: fmt.Sprintf("queue/message/%d", i), Prompt: fmt.Sprintf("message %d", i), Automatic: true}))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			answers = append(answers, resp)
		})
	}
	wg.Wait()
	require.Empty(t, errs)
	var delivered []*lifecyclev1.DeliverTurnResponse
	for _, a := range answers {
		switch a.GetRefusal() {
		case lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED:
			delivered = append(delivered, a)
		default:
			require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY, a.GetRefusal(), a.GetMessage())
		}
	}
	require.Len(t, delivered, 1)
	require.Len(t, answers, racers)
	turns := b.turnRequests(t, id)
	require.Len(t, turns, 1)
	require.Equal(t, delivered[0].GetJobId(), turns[0].GetJobId())
	require.Equal(t, delivered[0].GetJobId(), b.get(t, id).GetRunningJobId())
	var recorded int
	require.NoError(t, b.svc.Pool.QueryRow(t.Context(), `SELECT count(*) FROM deliveries WHERE session_id = $1`, id).Scan(&recorded))
	require.Equal(t, 1, recorded, "only the delivery made is recorded")
}

// TestRecordDrainAttemptCountsEachIdleSpell: attempts count while the
// session is at rest and deliverable, are refused otherwise, and start
// again after any resume (a delivery's included).
func TestRecordDrainAttemptCountsEachIdleSpell(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	q := b.queue(t)
	ctx := t.Context()
	id := b.needsInput(t)
	before, lines := b.get(t, id), len(b.timeline(t, id))

	for want := int32(1); want <= 3; want++ {
		resp, err := q.RecordDrainAttempt(ctx, &lifecyclev1.RecordDrainAttemptRequest{SessionId: id})
		require.NoError(t, err)
		require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED, resp.GetRefusal())
		require.Equal(t, want, resp.GetAttempts())
	}
	after := b.get(t, id)
	require.Equal(t, before.GetUpdatedAt().AsTime(), after.GetUpdatedAt().AsTime(), "bookkeeping, not a change of the session")
	require.Len(t, b.timeline(t, id), lines, "no line per attempt")
	require.Greater(t, after.GetVersion(), before.GetVersion(), "the markers changed")

	resp, err := q.DeliverTurn(ctx, idle(&lifecyclev1.DeliverTurnRequest{SessionId: id, DeliveryId: "queue/message/9", Automatic: true}))
	require.NoError(t, err)
	require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_UNSPECIFIED, resp.GetRefusal(), resp.GetMessage())
	busy, err := q.RecordDrainAttempt(ctx, &lifecyclev1.RecordDrainAttemptRequest{SessionId: id})
	require.NoError(t, err)
	require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_BUSY, busy.GetRefusal())
	require.Zero(t, busy.GetAttempts())
	require.NotEmpty(t, busy.GetMessage())

	_, err = b.fire(t, id, "pause")
	require.NoError(t, err)
	resp2, err := q.RecordDrainAttempt(ctx, &lifecyclev1.RecordDrainAttemptRequest{SessionId: id})
	require.NoError(t, err)
	require.Equal(t, int32(1), resp2.GetAttempts(), "the resume cleared the last spell's attempts")

	_, err = b.fire(t, id, "archive")
	require.NoError(t, err)
	closed, err := q.RecordDrainAttempt(ctx, &lifecyclev1.RecordDrainAttemptRequest{SessionId: id})
	require.NoError(t, err)
	require.Equal(t, lifecyclev1.DeliveryRefusal_DELIVERY_REFUSAL_CLOSED, closed.GetRefusal())
	_, err = q.RecordDrainAttempt(ctx, &lifecyclev1.RecordDrainAttemptRequest{SessionId: 999})
	require.Equal(t, codes.NotFound, status.Code(err))
}

// TestDeliveriesRetentionIsScheduled: with Temporal, the records of
// deliveries are pruned by lifecycle-deliveries-retention on
// zimmer-lifecycle, beside the outbox's schedule, with a week's retention
// when none is configured.
func TestDeliveriesRetentionIsScheduled(t *testing.T) {
	t.Parallel()
	temporalAddr := servicetest.TemporalAddress(t)
	cfg := config.Config{Config: servicetest.Config(t, service.MigrationSets...), OutboxRetention: 24 * time.Hour}
	cfg.TemporalAddress = temporalAddr
	svc := servicetest.New(t, service.New, cfg)

	for policy, every := range map[string]time.Duration{"deliveries": time.Hour, "outbox": time.Hour} {
		desc, err := svc.Temporal.ScheduleClient().GetHandle(t.Context(), retention.ScheduleID(service.Name, policy)).Describe(t.Context())
		require.NoError(t, err, policy)
		action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
		require.True(t, ok)
		require.Equal(t, temporalx.TaskQueue(service.Name), action.TaskQueue)
		require.Equal(t, retention.WorkflowName(service.Name, policy), action.Workflow)
		require.Equal(t, every, desc.Schedule.Spec.Intervals[0].Every)
	}
	require.Equal(t, "lifecycle-deliveries-retention", retention.ScheduleID(service.Name, "deliveries"))
}
