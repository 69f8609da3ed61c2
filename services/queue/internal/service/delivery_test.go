package service_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// roster is the sessions most delivery tests start from: 1 waiting, 2
// running turn job-2, 3 archived, 4 failed, 5 needs_input.
func roster() []*fakeSession {
	return []*fakeSession{
		{ID: 1, Slug: "one", Status: rules.StatusWaiting},
		{ID: 2, Slug: "two", Status: rules.StatusRunning, RunningJobID: "job-2"},
		{ID: 3, Slug: "three", Status: rules.StatusArchived},
		{ID: 4, Slug: "four", Status: rules.StatusFailed},
		{ID: 5, Slug: "five", Status: rules.StatusNeedsInput},
	}
}

// deliveriesTo is the deliveries that became turns of session id.
func (h *harness) deliveriesTo(id int64) []appliedDelivery {
	var out []appliedDelivery
	for _, d := range h.lifecycle.appliedDeliveries() {
		if d.SessionID == id {
			out = append(out, d)
		}
	}
	return out
}

// callsTo is every DeliverTurn made to session id.
func (h *harness) callsTo(id int64) []*lifecyclev1.DeliverTurnRequest {
	var out []*lifecyclev1.DeliverTurnRequest
	for _, c := range h.lifecycle.deliverCalls() {
		if c.GetSessionId() == id {
			out = append(out, c)
		}
	}
	return out
}

func messageDelivery(id int64) string { return "queue/message/" + strconv.FormatInt(id, 10) }

func TestFollowUpToAnIdleSessionIsItsTurnNow(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	for _, id := range []int64{1, 5} {
		resp, err := h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: strconv.FormatInt(id, 10), Prompt: "carry on", Goal: "ship it"})
		require.NoError(t, err)
		require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, resp.GetOutcome())
		require.Nil(t, resp.GetEnqueuedMessage())

		calls := h.callsTo(id)
		require.Len(t, calls, 1, "one DeliverTurn")
		c := calls[0]
		require.Equal(t, lifecyclev1.DeliveryMode_DELIVERY_MODE_IDLE, c.GetMode())
		require.True(t, strings.HasPrefix(c.GetDeliveryId(), "queue/follow_up/"+strconv.FormatInt(id, 10)+"/"), c.GetDeliveryId())
		require.Equal(t, "carry on", c.GetPrompt())
		require.Equal(t, "ship it", c.GetGoal())
		require.False(t, c.GetAutomatic(), "a caller's follow-up is not the drain's")
		require.Equal(t, "a follow-up", c.GetWhat())

		s := h.lifecycle.session(id)
		require.Equal(t, rules.StatusRunning, s.Status)
		require.Equal(t, s.RunningJobID, resp.GetJobId())
		require.Empty(t, h.list(t, id), "nothing was queued")
	}
}

func TestFollowUpToARunningSessionIsQueued(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	resp, err := h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "two", Prompt: "after this", Goal: "g"})
	require.NoError(t, err)
	require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, resp.GetOutcome())
	require.Equal(t, domain.FollowUpQueuedMessage, resp.GetMessage())
	require.Empty(t, resp.GetJobId())
	m := resp.GetEnqueuedMessage()
	require.Equal(t, "pending", m.GetStatus())
	require.Equal(t, int32(1), m.GetPosition())
	require.Equal(t, "after this", m.GetContent())
	require.Equal(t, "g", m.GetGoal())
	require.Empty(t, h.callsTo(2), "a running session is not asked")
	require.Empty(t, h.runner.interrupts())
	require.Equal(t, "job-2", h.lifecycle.session(2).RunningJobID, "the running turn goes on")
}

func TestFollowUpForcedOnARunningSessionInterruptsAndDelivers(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	resp, err := h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "2", Prompt: "stop and do this", ForceImmediate: true})
	require.NoError(t, err)
	require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, resp.GetOutcome())

	ms := h.list(t, 2)
	require.Len(t, ms, 1)
	require.Equal(t, "sent", ms[0].GetStatus(), "the follow-up went through the queue and was sent")
	require.Equal(t, []string{
		"runner.InterruptTurn 2",
		"lifecycle.DeliverTurn DELIVERY_MODE_AFTER_INTERRUPT " + messageDelivery(ms[0].GetId()),
	}, h.log.with("runner.", "lifecycle.DeliverTurn"), "the turn is halted, then the message delivered")
	require.Equal(t, "queue interrupt", h.runner.interrupts()[0].GetReason())
	require.Equal(t, h.lifecycle.session(2).RunningJobID, resp.GetJobId())
	require.Len(t, h.deliveriesTo(2), 1)
	require.Empty(t, h.lifecycle.pauseCalls())
}

// The queue read the session waiting, but it started running before the
// delivery: lifecycle answers BUSY, and the follow-up waits in the queue.
func TestFollowUpToASessionThatStartedRunningMeanwhileIsQueued(t *testing.T) {
	t.Parallel()
	h := startHarness(t, &fakeSession{ID: 1, Status: rules.StatusRunning, RunningJobID: "job-1", Reported: rules.StatusWaiting})
	resp, err := h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "1", Prompt: "next"})
	require.NoError(t, err)
	require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, resp.GetOutcome())
	require.Equal(t, domain.FollowUpQueuedMessage, resp.GetMessage())
	require.Len(t, h.callsTo(1), 1, "lifecycle was asked and refused")
	require.Empty(t, h.deliveriesTo(1))
	require.Equal(t, map[string]int{"pending": 1}, h.byStatus(t, 1))
}

// Forced, and the session the queue read waiting turns out running: the
// force still applies, so the turn is interrupted and the follow-up
// delivered rather than only queued.
func TestFollowUpForcedToASessionThatStartedRunningMeanwhileInterruptsIt(t *testing.T) {
	t.Parallel()
	h := startHarness(t, &fakeSession{ID: 1, Status: rules.StatusRunning, RunningJobID: "job-1", Reported: rules.StatusWaiting})
	resp, err := h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "1", Prompt: "now", ForceImmediate: true})
	require.NoError(t, err)
	require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, resp.GetOutcome())
	ms := h.list(t, 1)
	require.Len(t, ms, 1)
	require.Equal(t, []string{
		"lifecycle.DeliverTurn DELIVERY_MODE_IDLE " + h.callsTo(1)[0].GetDeliveryId(),
		"runner.InterruptTurn 1",
		"lifecycle.DeliverTurn DELIVERY_MODE_AFTER_INTERRUPT " + messageDelivery(ms[0].GetId()),
	}, h.log.with("runner.", "lifecycle.DeliverTurn"))
	require.Equal(t, "sent", ms[0].GetStatus())
	require.Equal(t, h.lifecycle.session(1).RunningJobID, resp.GetJobId())
}

// Forced, but the runner cannot halt the turn: the follow-up is queued all
// the same (it goes when the turn ends), so the caller is told it was
// queued, not that it failed, and the acting session's edge stays.
func TestFollowUpForcedWhenTheInterruptFailsIsQueued(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	h.runner.failWith(status.Error(codes.Unavailable, "the runner is restarting"))
	resp, err := h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "2", Prompt: "now", ForceImmediate: true, ActingSessionId: 9})
	require.NoError(t, err)
	require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, resp.GetOutcome())
	require.Contains(t, resp.GetMessage(), "could not be interrupted")
	m := resp.GetEnqueuedMessage()
	require.Equal(t, "pending", m.GetStatus())
	require.Equal(t, map[string]int{"pending": 1}, h.byStatus(t, 2))
	require.Len(t, h.runner.interrupts(), 1)
	require.Empty(t, h.callsTo(2))
	require.Empty(t, h.lineage.retracted(), "the message is queued and will be delivered: its edge stays")
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, resp.GetUncleEdge())
}

func TestFollowUpToAClosedSessionIsRefused(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	_, err := h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "3", Prompt: "hello", ActingSessionId: 1})
	requireCode(t, codes.FailedPrecondition, err)
	require.Contains(t, status.Convert(err).Message(), "session 3 is archived")
	require.Contains(t, status.Convert(err).Message(), "unarchive it first")

	_, err = h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "four", Prompt: "hello", ForceImmediate: true})
	requireCode(t, codes.FailedPrecondition, err)
	require.Contains(t, status.Convert(err).Message(), "session 4 has failed; restart it")
	require.Contains(t, status.Convert(err).Message(), "POST /api/v1/sessions/4/restart")

	require.Empty(t, h.lifecycle.deliverCalls())
	require.Empty(t, h.runner.interrupts())
	require.Empty(t, h.lineage.recorded(), "a refused follow-up records no uncle edge")
	require.Empty(t, h.list(t, 3))
	require.Empty(t, h.list(t, 4))
}

// A follow-up retried with its idempotency_key (its answer was lost) is
// delivered or queued once, whatever the session did in between.
func TestARetriedFollowUpIsDeliveredOrQueuedOnce(t *testing.T) {
	t.Parallel()
	h := startHarness(t,
		&fakeSession{ID: 1, Status: rules.StatusWaiting},
		&fakeSession{ID: 2, Status: rules.StatusRunning, RunningJobID: "job-2"},
		&fakeSession{ID: 6, Status: rules.StatusRunning, RunningJobID: "job-6"},
		&fakeSession{ID: 7, Status: rules.StatusRunning, RunningJobID: "job-7"},
	)
	followUp := func(t *testing.T, session int64, force bool) *queuev1.FollowUpResponse {
		t.Helper()
		resp, err := h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: strconv.FormatInt(session, 10),
			Prompt: "once only", ForceImmediate: force, IdempotencyKey: "key-" + strconv.FormatInt(session, 10)})
		require.NoError(t, err)
		return resp
	}

	t.Run("delivered, retried while the turn it became runs", func(t *testing.T) {
		t.Parallel()
		first := followUp(t, 1, false)
		require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, first.GetOutcome())
		require.Equal(t, rules.StatusRunning, h.lifecycle.session(1).Status)
		again := followUp(t, 1, false)
		require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, again.GetOutcome(), "answered as the first call was")
		require.Equal(t, first.GetJobId(), again.GetJobId())
		require.Len(t, h.deliveriesTo(1), 1)
		require.Empty(t, h.list(t, 1), "the retry was not queued behind its own turn")
	})

	t.Run("queued, retried", func(t *testing.T) {
		t.Parallel()
		first := followUp(t, 2, false)
		again := followUp(t, 2, false)
		require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, again.GetOutcome())
		require.Equal(t, first.GetEnqueuedMessage().GetId(), again.GetEnqueuedMessage().GetId())
		require.Len(t, h.list(t, 2), 1)
	})

	t.Run("queued, retried once the session is at rest", func(t *testing.T) {
		t.Parallel()
		first := followUp(t, 6, false)
		require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, first.GetOutcome())
		// The turn ended and the session paused; the drain has not run yet.
		h.lifecycle.setStatus(6, rules.StatusNeedsInput)
		again := followUp(t, 6, false)
		require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, again.GetOutcome(), "answered as the first call was")
		require.Equal(t, first.GetEnqueuedMessage().GetId(), again.GetEnqueuedMessage().GetId())
		require.Empty(t, h.deliveriesTo(6), "the queued copy is the one the drain delivers; none went around it")
		require.Equal(t, map[string]int{"pending": 1}, h.byStatus(t, 6))
	})

	t.Run("forced, retried", func(t *testing.T) {
		t.Parallel()
		first := followUp(t, 7, true)
		require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, first.GetOutcome())
		again := followUp(t, 7, true)
		require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, again.GetOutcome())
		require.Equal(t, first.GetJobId(), again.GetJobId())
		require.Len(t, h.deliveriesTo(7), 1)
		require.Equal(t, first.GetJobId(), h.lifecycle.session(7).RunningJobID, "the retry did not halt the turn the first call started")
		interrupts := 0
		for _, c := range h.runner.interrupts() {
			if c.GetSessionId() == 7 {
				interrupts++
			}
		}
		require.Equal(t, 1, interrupts)
		for _, p := range h.lifecycle.pauseCalls() {
			require.NotEqual(t, "7", p.GetSessionId(), "session 7 was not paused")
		}
		require.Equal(t, map[string]int{"sent": 1}, h.byStatus(t, 7))
	})
}

// The same forced follow-up sent twice at once (a client's retry racing
// its first try): one interrupt, one turn, and both calls are told it is
// the session's turn now.
func TestAForcedFollowUpRacingItsRetryInterruptsOnce(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	h.runner.setDelay(200 * time.Millisecond)
	answers := make([]*queuev1.FollowUpResponse, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "2", Prompt: "now",
				ForceImmediate: true, IdempotencyKey: "same"})
		}()
	}
	wg.Wait()
	for i := range answers {
		require.NoError(t, errs[i])
		require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, answers[i].GetOutcome())
		require.Equal(t, h.lifecycle.session(2).RunningJobID, answers[i].GetJobId())
	}
	requireOneTurnHalted(t, h, "job-2")
	require.Len(t, h.deliveriesTo(2), 1)
	require.Equal(t, map[string]int{"sent": 1}, h.byStatus(t, 2))
	require.Empty(t, h.lifecycle.pauseCalls())
}

// requireOneTurnHalted: every InterruptTurn named turn, the one running
// when the interrupts were asked. Calls racing each other both ask before
// either delivers; the runner halts that turn once and answers each alike.
func requireOneTurnHalted(t *testing.T, h *harness, turn string) {
	t.Helper()
	calls := h.runner.interrupts()
	require.NotEmpty(t, calls)
	for _, c := range calls {
		require.Equal(t, turn, c.GetTurnId())
	}
}

func TestUncleEdgeIsRecordedBeforeTheDelivery(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)

	// An operator declares the acting session.
	resp, err := h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "one", Prompt: "from 9", ActingSessionId: 9})
	require.NoError(t, err)
	require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, resp.GetUncleEdge())
	require.Equal(t, []string{
		"lineage.RecordUncleEdge 9→1",
		"lifecycle.DeliverTurn DELIVERY_MODE_IDLE " + h.callsTo(1)[0].GetDeliveryId(),
	}, h.log.with("lineage.", "lifecycle.DeliverTurn", "runner."))
	require.Equal(t, "grpc.follow_up", h.lineage.recorded()[0].GetEntryPoint())

	// A session credential acts as its own session: declaring another is
	// refused, nothing sent nor recorded (REST used to store its own
	// session silently, issue 20 item 7); leaving it out acts as its own.
	ctx, gateway := h.asSession(t, 2)
	_, err = gateway.FollowUp(ctx, &queuev1.FollowUpRequest{SessionId: "2", Prompt: "now", ForceImmediate: true, ActingSessionId: 1})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "acting_session_id 1 is not the session this credential belongs to (#2)")
	_, err = gateway.EnqueueMessage(ctx, &queuev1.EnqueueMessageRequest{SessionId: "2", Content: "queued", ActingSessionId: 1})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	require.Empty(t, h.list(t, 2), "a refused call queues nothing")
	resp, err = gateway.FollowUp(ctx, &queuev1.FollowUpRequest{SessionId: "2", Prompt: "now", ForceImmediate: true})
	require.NoError(t, err)
	require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, resp.GetOutcome())
	sent := h.list(t, 2)[0]
	require.Equal(t, int64(2), sent.GetActingSessionId())
	require.Equal(t, []string{
		"lineage.RecordUncleEdge 9→1",
		"lifecycle.DeliverTurn DELIVERY_MODE_IDLE " + h.callsTo(1)[0].GetDeliveryId(),
		"lineage.RecordUncleEdge 2→2",
		"runner.InterruptTurn 2",
		"lifecycle.DeliverTurn DELIVERY_MODE_AFTER_INTERRUPT " + messageDelivery(sent.GetId()),
	}, h.log.with("lineage.", "lifecycle.DeliverTurn", "runner."))
	require.Empty(t, h.lineage.retracted())
}

func TestUncleEdgeIsRetractedWhenTheDeliveryFails(t *testing.T) {
	t.Parallel()
	for _, outcome := range []lineagev1.UncleEdgeOutcome{
		lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN,
		lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_INVERTED,
	} {
		t.Run(outcome.String(), func(t *testing.T) {
			t.Parallel()
			h := startHarness(t, roster()...)
			h.lineage.answer(outcome)
			h.lifecycle.setDeliverHook(func(*lifecyclev1.DeliverTurnRequest) error {
				return status.Error(codes.Unavailable, "lifecycle is restarting")
			})
			_, err := h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "1", Prompt: "lost", ActingSessionId: 9})
			requireCode(t, codes.Unavailable, err)

			retracted := h.lineage.retracted()
			require.Len(t, retracted, 1)
			r := retracted[0]
			require.Equal(t, outcome, r.GetRecorded(), "the retraction hands back what was recorded")
			require.Equal(t, int64(9), r.GetActingSessionId())
			require.Equal(t, int64(1), r.GetTargetSessionId())
			require.Equal(t, "grpc.follow_up", r.GetEntryPoint())
			require.Equal(t, []string{
				"lineage.RecordUncleEdge 9→1",
				"lifecycle.DeliverTurn DELIVERY_MODE_IDLE " + h.callsTo(1)[0].GetDeliveryId(),
				"lineage.RetractUncleEdge 9→1",
			}, h.log.with("lineage.", "lifecycle.DeliverTurn"))
			require.Empty(t, h.list(t, 1), "nothing was queued either")
			require.Equal(t, rules.StatusWaiting, h.lifecycle.session(1).Status)
		})
	}
}

func TestUncleEdgeRefusedByLineageSendsNothing(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	h.lineage.answer(lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_SENIOR)
	for _, req := range []*queuev1.FollowUpRequest{
		{SessionId: "1", Prompt: "to the idle one", ActingSessionId: 9},
		{SessionId: "2", Prompt: "to the running one", ActingSessionId: 9},
		{SessionId: "2", Prompt: "forced", ActingSessionId: 9, ForceImmediate: true},
	} {
		_, err := h.queue.FollowUp(t.Context(), req)
		requireCode(t, codes.FailedPrecondition, err)
		require.Contains(t, status.Convert(err).Message(), "lineage answers UNCLE_EDGE_OUTCOME_REFUSED_SENIOR for 9 →", "lineage's words reach the caller")
		require.Contains(t, status.Convert(err).Message(), "lineage refuses the uncle edge (nothing was sent): ")
	}
	_, err := h.queue.EnqueueMessage(t.Context(), &queuev1.EnqueueMessageRequest{SessionId: "2", Content: "queued", ActingSessionId: 9})
	requireCode(t, codes.FailedPrecondition, err)

	require.Len(t, h.lineage.recorded(), 4)
	require.Empty(t, h.lifecycle.deliverCalls(), "no DeliverTurn at all")
	require.Empty(t, h.runner.interrupts())
	require.Empty(t, h.list(t, 1))
	require.Empty(t, h.list(t, 2), "nothing queued")
	require.Empty(t, h.lineage.retracted(), "nothing was recorded, so nothing is retracted")
}

func TestUncleEdgeThatChangedNothingIsNotRetracted(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	h.lineage.answer(lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_NOTHING_ALREADY_REACHABLE)
	h.lifecycle.setDeliverHook(func(*lifecyclev1.DeliverTurnRequest) error { return status.Error(codes.Unavailable, "down") })
	resp, err := h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "1", Prompt: "lost", ActingSessionId: 9})
	requireCode(t, codes.Unavailable, err)
	require.Nil(t, resp)
	require.Len(t, h.lineage.recorded(), 1)
	require.Len(t, h.lifecycle.deliverCalls(), 1)
	require.Empty(t, h.lineage.retracted())
}

func TestTurnEndHandsOverTheNextMessage(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	first, second := h.enqueue(t, 2, "first"), h.enqueue(t, 2, "second")

	resp, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: "job-2"})
	require.NoError(t, err)
	require.True(t, resp.GetDelivered())
	require.Equal(t, first.GetId(), resp.GetEnqueuedMessage().GetId())
	require.Equal(t, "sent", resp.GetEnqueuedMessage().GetStatus())
	require.Equal(t, "first", resp.GetPrompt())
	require.Equal(t, h.lifecycle.session(2).RunningJobID, resp.GetJobId())
	calls := h.callsTo(2)
	require.Len(t, calls, 1)
	require.Equal(t, lifecyclev1.DeliveryMode_DELIVERY_MODE_HANDOVER, calls[0].GetMode())
	require.Equal(t, "job-2", calls[0].GetFromJobId())
	require.Equal(t, messageDelivery(first.GetId()), calls[0].GetDeliveryId())
	require.True(t, calls[0].GetAutomatic(), "the turn-end drain is automatic")

	// The runner's retry, its answer lost: the same message, no second turn.
	again, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: "job-2"})
	require.NoError(t, err)
	require.True(t, again.GetDelivered())
	require.Equal(t, resp.GetEnqueuedMessage().GetId(), again.GetEnqueuedMessage().GetId())
	require.Equal(t, resp.GetJobId(), again.GetJobId())
	require.Equal(t, "first", again.GetPrompt())
	require.Len(t, h.callsTo(2), 1, "no second DeliverTurn")
	ms := h.messages(t, 2)
	require.Equal(t, "pending", ms[second.GetId()].GetStatus())
	require.Equal(t, int32(1), ms[second.GetId()].GetPosition(), "the rest moved up")

	// The handed-over turn ends in turn; then the queue is empty.
	next, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: resp.GetJobId()})
	require.NoError(t, err)
	require.Equal(t, second.GetId(), next.GetEnqueuedMessage().GetId())
	empty, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: next.GetJobId()})
	require.NoError(t, err)
	require.False(t, empty.GetDelivered())
	require.Nil(t, empty.GetEnqueuedMessage())
	require.Len(t, h.callsTo(2), 2, "an empty queue asks lifecycle nothing")

	_, err = h.queue.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: "x"})
	requireCode(t, codes.PermissionDenied, err)
}

func TestTurnEndHandOverRefusedLeavesTheMessagePending(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	m := h.enqueue(t, 2, "waits")
	// A turn that is no longer the running one cannot hand over.
	resp, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: "job-1"})
	require.NoError(t, err)
	require.False(t, resp.GetDelivered())
	require.Len(t, h.callsTo(2), 1)
	require.Empty(t, h.deliveriesTo(2))
	got := h.messages(t, 2)[m.GetId()]
	require.Equal(t, "pending", got.GetStatus())
	require.Equal(t, int32(1), got.GetPosition())
	require.Equal(t, "job-2", h.lifecycle.session(2).RunningJobID)

	_, err = h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2})
	requireCode(t, codes.InvalidArgument, err)
}

// The runner's drain activity retries a hand-over whose answer is late
// while the first call is still in flight: both get the one hand-over.
func TestTurnEndHandOverRetriedWhileInFlight(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	first := h.enqueue(t, 2, "first")
	h.enqueue(t, 2, "second")
	h.lifecycle.setDeliverHook(func(*lifecyclev1.DeliverTurnRequest) error {
		time.Sleep(300 * time.Millisecond) // lifecycle is slow to answer
		return nil
	})

	answers := make([]*queuev1.DeliverNextMessageResponse, 2)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: "job-2"})
			if err == nil {
				answers[i] = resp
			}
		}()
	}
	wg.Wait()
	for _, a := range answers {
		require.NotNil(t, a)
		require.True(t, a.GetDelivered(), "a retry is answered the hand-over, never told to pause")
		require.Equal(t, first.GetId(), a.GetEnqueuedMessage().GetId())
		require.Equal(t, answers[0].GetJobId(), a.GetJobId())
	}
	require.Len(t, h.deliveriesTo(2), 1)
	require.Equal(t, map[string]int{"sent": 1, "pending": 1}, h.byStatus(t, 2))
}

// Lifecycle applied a hand-over but its answer was lost: the runner's
// retry claims the message again, lifecycle answers already_delivered with
// the turn it made, and that turn is handed over (exactly once).
func TestTurnEndHandOverWhoseAnswerWasLostIsHandedOverOnRetry(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	a := h.enqueue(t, 2, "A")
	h.lifecycle.loseAnswers(1)
	_, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: "job-2"})
	requireCode(t, codes.Unavailable, err)
	require.Equal(t, "pending", h.messages(t, 2)[a.GetId()].GetStatus(), "the queue's claim rolled back")
	turn := h.lifecycle.session(2).RunningJobID
	require.NotEqual(t, "job-2", turn, "lifecycle made the hand-over")

	resp, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: "job-2"})
	require.NoError(t, err)
	require.True(t, resp.GetDelivered())
	require.Equal(t, a.GetId(), resp.GetEnqueuedMessage().GetId())
	require.Equal(t, turn, resp.GetJobId(), "the turn lifecycle made, which the runner has not run yet")
	require.Equal(t, "A", resp.GetPrompt())
	require.Len(t, h.deliveriesTo(2), 1)
}

// A message lifecycle made a turn whose answer the queue lost (send now,
// here) is still pending when that very turn ends: it must not be handed
// over as the next turn, which would run its prompt a second time.
func TestTurnEndDoesNotHandOverTheMessageOfTheTurnThatEnded(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	a, b := h.enqueue(t, 1, "A"), h.enqueue(t, 1, "B")
	h.lifecycle.loseAnswers(1)
	_, err := h.queue.SendEnqueuedMessageNow(t.Context(), &queuev1.SendEnqueuedMessageNowRequest{SessionId: "1", MessageId: a.GetId()})
	requireCode(t, codes.Unavailable, err)
	turnA := h.lifecycle.session(1).RunningJobID
	require.Equal(t, "pending", h.messages(t, 1)[a.GetId()].GetStatus())

	// A's turn runs and ends; the runner's turn-end drain asks for the next.
	resp, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 1, FromJobId: turnA})
	require.NoError(t, err)
	require.True(t, resp.GetDelivered())
	require.Equal(t, b.GetId(), resp.GetEnqueuedMessage().GetId(), "the next message, not A again")
	require.Equal(t, "B", resp.GetPrompt())
	require.NotEqual(t, turnA, resp.GetJobId())
	ms := h.messages(t, 1)
	require.Equal(t, "sent", ms[a.GetId()].GetStatus(), "A is recorded as the turn it became")
	require.Equal(t, "sent", ms[b.GetId()].GetStatus())
	delivered := h.deliveriesTo(1)
	require.Len(t, delivered, 2)
	require.Equal(t, []string{messageDelivery(a.GetId()), messageDelivery(b.GetId())}, []string{delivered[0].DeliveryID, delivered[1].DeliveryID})

	// The runner's retry gets B again.
	again, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 1, FromJobId: turnA})
	require.NoError(t, err)
	require.Equal(t, b.GetId(), again.GetEnqueuedMessage().GetId())
	require.Equal(t, resp.GetJobId(), again.GetJobId())

	// With nothing else queued, the turn end after a lost answer hands over
	// nothing.
	c := h.enqueue(t, 5, "C")
	h.lifecycle.loseAnswers(1)
	_, err = h.queue.SendEnqueuedMessageNow(t.Context(), &queuev1.SendEnqueuedMessageNowRequest{SessionId: "5", MessageId: c.GetId()})
	requireCode(t, codes.Unavailable, err)
	none, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 5, FromJobId: h.lifecycle.session(5).RunningJobID})
	require.NoError(t, err)
	require.False(t, none.GetDelivered(), "C ran as the turn that ended: the runner pauses")
	require.Equal(t, map[string]int{"sent": 1}, h.byStatus(t, 5))
}

func TestSendNow(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)

	a, b := h.enqueue(t, 1, "a"), h.enqueue(t, 1, "b")
	resp, err := h.queue.SendEnqueuedMessageNow(t.Context(), &queuev1.SendEnqueuedMessageNowRequest{SessionId: "1", MessageId: b.GetId()})
	require.NoError(t, err)
	require.True(t, resp.GetDelivered())
	require.Equal(t, "sent", resp.GetEnqueuedMessage().GetStatus())
	calls := h.callsTo(1)
	require.Len(t, calls, 1)
	require.Equal(t, lifecyclev1.DeliveryMode_DELIVERY_MODE_IDLE, calls[0].GetMode())
	require.Equal(t, messageDelivery(b.GetId()), calls[0].GetDeliveryId())
	require.Equal(t, "b", calls[0].GetPrompt())
	require.False(t, calls[0].GetAutomatic())
	ms := h.messages(t, 1)
	require.Equal(t, "pending", ms[a.GetId()].GetStatus())
	require.Equal(t, int32(1), ms[a.GetId()].GetPosition())

	c, d := h.enqueue(t, 2, "c"), h.enqueue(t, 2, "d")
	resp, err = h.queue.SendEnqueuedMessageNow(t.Context(), &queuev1.SendEnqueuedMessageNowRequest{SessionId: "2", MessageId: d.GetId()})
	require.NoError(t, err)
	require.False(t, resp.GetDelivered(), "a running session takes it when its turn ends")
	require.Contains(t, resp.GetMessage(), "moved to the front")
	ms = h.messages(t, 2)
	require.Equal(t, int32(1), ms[d.GetId()].GetPosition())
	require.Equal(t, int32(2), ms[c.GetId()].GetPosition())
	require.Equal(t, "pending", ms[d.GetId()].GetStatus())
	require.Empty(t, h.callsTo(2))
	require.Equal(t, "job-2", h.lifecycle.session(2).RunningJobID)
}

// Two interrupts of one running session at once: each is served in turn,
// under the session's lock. The first halts the turn both were asked to
// halt and delivers its message; the second finds that turn gone — the
// running one is the first's message, which must run whole — so it halts
// nothing and its message goes to the front, to be handed over when the
// first's turn ends. Each message is delivered once; none is lost.
func TestConcurrentInterruptsHaltOnlyTheTurnTheyWereAskedToHalt(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	c := h.enqueue(t, 2, "C (queued before)")
	a, b := h.enqueue(t, 2, "A"), h.enqueue(t, 2, "B")
	h.runner.setDelay(300 * time.Millisecond) // the ladder takes a while

	errs := make([]error, 2)
	answers := make([]*queuev1.InterruptWithEnqueuedMessageResponse, 2)
	var wg sync.WaitGroup
	for i, m := range []*queuev1.EnqueuedMessage{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = h.queue.InterruptWithEnqueuedMessage(t.Context(),
				&queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "2", MessageId: m.GetId()})
		}()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])

	calls := h.runner.interrupts()
	require.Len(t, calls, 2)
	for _, c := range calls {
		require.Equal(t, "job-2", c.GetTurnId(), "each names the turn running when it was asked")
	}
	delivered := h.deliveriesTo(2)
	require.Len(t, delivered, 1, "only the first interrupt's message replaced the halted turn")
	require.Equal(t, lifecyclev1.DeliveryMode_DELIVERY_MODE_AFTER_INTERRUPT, delivered[0].Mode)
	first, second := answers[0], answers[1]
	if delivered[0].DeliveryID != messageDelivery(a.GetId()) {
		first, second = second, first
	}
	require.True(t, first.GetInterrupted())
	require.Equal(t, "sent", first.GetEnqueuedMessage().GetStatus())
	require.False(t, second.GetInterrupted(), "the first's message runs whole")
	require.Equal(t, "pending", second.GetEnqueuedMessage().GetStatus())
	require.Equal(t, int32(1), second.GetEnqueuedMessage().GetPosition(), "next in line")
	require.Contains(t, second.GetMessage(), "is first in line")
	require.Equal(t, delivered[0].JobID, h.lifecycle.session(2).RunningJobID, "the first's message is the turn now")
	ms := h.messages(t, 2)
	require.Equal(t, int32(2), ms[c.GetId()].GetPosition(), "the message queued before waits behind it")
	require.Equal(t, map[string]int{"sent": 1, "pending": 2}, h.byStatus(t, 2), "none lost")
	require.Empty(t, h.lifecycle.pauseCalls())

	// The first's turn ends: the hand-over takes the second's message.
	next, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: delivered[0].JobID})
	require.NoError(t, err)
	require.True(t, next.GetDelivered())
	require.Equal(t, second.GetEnqueuedMessage().GetId(), next.GetEnqueuedMessage().GetId())
}

// More interrupts of one session at once than the queue has database
// connections (16): the ones waiting for the session's lock must not starve
// the one holding it of the connection its delivery needs. One halts the
// turn they were all asked to halt; every other message is next in line,
// none lost.
func TestManyConcurrentInterruptsOfOneSessionAllComplete(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	const n = 24
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = h.enqueue(t, 2, fmt.Sprintf("message %d", i)).GetId()
	}
	h.runner.setDelay(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = h.queue.InterruptWithEnqueuedMessage(ctx, &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "2", MessageId: id})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, h.deliveriesTo(2), 1, "one message replaced the halted turn")
	require.Equal(t, map[string]int{"sent": 1, "pending": n - 1}, h.byStatus(t, 2))
}

// Interrupting with a message that an interrupt already delivered (a
// double click) does not halt the turn that message became.
func TestInterruptWithAMessageAlreadySentHaltsNothing(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	a := h.enqueue(t, 2, "A")
	h.runner.setDelay(100 * time.Millisecond)

	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = h.queue.InterruptWithEnqueuedMessage(t.Context(), &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "2", MessageId: a.GetId()})
		}()
	}
	wg.Wait()
	codesSeen := []codes.Code{status.Code(errs[0]), status.Code(errs[1])}
	require.ElementsMatch(t, []codes.Code{codes.OK, codes.FailedPrecondition}, codesSeen, "%v", errs)
	delivered := h.deliveriesTo(2)
	require.Len(t, delivered, 1)
	requireOneTurnHalted(t, h, "job-2")
	s := h.lifecycle.session(2)
	require.Equal(t, rules.StatusRunning, s.Status)
	require.Equal(t, delivered[0].JobID, s.RunningJobID, "the message's turn runs on")
	require.Empty(t, h.lifecycle.pauseCalls())
}

// The turn was halted and the delivery behind it failed: the session is
// paused (so it does not stay running with no turn) and the message waits.
func TestInterruptWhoseDeliveryFailsPausesTheSession(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	m := h.enqueue(t, 2, "A")
	h.lifecycle.setDeliverHook(func(*lifecyclev1.DeliverTurnRequest) error {
		return status.Error(codes.Unavailable, "lifecycle is restarting")
	})
	_, err := h.queue.InterruptWithEnqueuedMessage(t.Context(), &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "2", MessageId: m.GetId()})
	requireCode(t, codes.Unavailable, err)

	require.Equal(t, []string{
		"runner.InterruptTurn 2",
		"lifecycle.DeliverTurn DELIVERY_MODE_AFTER_INTERRUPT " + messageDelivery(m.GetId()),
		"lifecycle.TransitionSession 2 pause by queue",
	}, h.log.with("runner.", "lifecycle."))
	pauses := h.lifecycle.pauseCalls()
	require.Len(t, pauses, 1)
	require.Equal(t, "queue", pauses[0].GetPausedBy())
	require.Equal(t, rules.StatusNeedsInput, h.lifecycle.session(2).Status)
	got := h.messages(t, 2)[m.GetId()]
	require.Equal(t, "pending", got.GetStatus(), "the message stays pending for the pause's drain")
	require.Equal(t, int32(1), got.GetPosition())
}

// An interrupt whose first delivery lifecycle applied but whose answer was
// lost: the retry halts what runs (most likely the message's own turn),
// lifecycle answers already delivered and starts nothing, so the session is
// paused rather than left running with no process.
func TestInterruptRetriedAfterALostAnswerPausesTheSession(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	m := h.enqueue(t, 2, "A")
	h.lifecycle.loseAnswers(1)
	_, err := h.queue.InterruptWithEnqueuedMessage(t.Context(), &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "2", MessageId: m.GetId()})
	require.Error(t, err, "the answer was lost")
	require.Len(t, h.lifecycle.pauseCalls(), 1, "the first attempt paused (its delivery looked failed)")

	applied := h.deliveriesTo(2)
	require.Len(t, applied, 1)
	h.lifecycle.update(2, func(s *fakeSession) { // the applied delivery's turn runs
		s.Status, s.RunningJobID = rules.StatusRunning, applied[0].JobID
	})
	_, err = h.queue.InterruptWithEnqueuedMessage(t.Context(), &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "2", MessageId: m.GetId()})
	require.NoError(t, err)
	require.Equal(t, "sent", h.messages(t, 2)[m.GetId()].GetStatus())
	require.Len(t, h.lifecycle.pauseCalls(), 2, "the retry halted a turn and started none: paused")
}

// The caller goes away while the runner halts the turn (a client that gave
// up, a gateway killed): the halt happens all the same, so the delivery in
// its place must too, or the session stays running with no process and the
// message pending (TestReplicas found it after a gateway's kill -9).
func TestInterruptWhoseCallerLeavesDuringTheHaltStillDelivers(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	m := h.enqueue(t, 2, "A")
	h.runner.setDelay(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := h.queue.InterruptWithEnqueuedMessage(ctx, &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "2", MessageId: m.GetId()})
	requireCode(t, codes.DeadlineExceeded, err)

	require.Eventually(t, func() bool { return len(h.deliveriesTo(2)) == 1 }, 10*time.Second, 20*time.Millisecond,
		"the halted turn's replacement was never delivered")
	require.Eventually(t, func() bool { return h.messages(t, 2)[m.GetId()].GetStatus() == "sent" }, 10*time.Second, 20*time.Millisecond)
	s := h.lifecycle.session(2)
	require.Equal(t, rules.StatusRunning, s.Status)
	require.Equal(t, h.deliveriesTo(2)[0].JobID, s.RunningJobID, "the message's turn runs in the halted one's place")
	require.Empty(t, h.lifecycle.pauseCalls())
}

func TestInterruptOfAnIdleSessionDeliversAtOnce(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	m := h.enqueue(t, 5, "A")
	resp, err := h.queue.InterruptWithEnqueuedMessage(t.Context(), &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "5", MessageId: m.GetId()})
	require.NoError(t, err)
	require.False(t, resp.GetInterrupted(), "no turn was running")
	require.Equal(t, "sent", resp.GetEnqueuedMessage().GetStatus())
	delivered := h.deliveriesTo(5)
	require.Len(t, delivered, 1)
	require.Equal(t, lifecyclev1.DeliveryMode_DELIVERY_MODE_IDLE, delivered[0].Mode)
	require.Empty(t, h.lifecycle.pauseCalls())
}

// A send-now or an interrupt names its message by id, and an acting
// session that could exist: message_id 0 used to deliver whichever
// message came first, and a negative acting_session_id reached lineage,
// whose refusal came back as an internal error (issue 20's fuzz).
func TestSendNowAndInterruptRefuseIdsNoMessageHas(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	m := h.enqueue(t, 5, "held")
	for _, tc := range []struct {
		message, acting int64
		field           string
	}{{0, 0, "message_id"}, {-1, 0, "message_id"}, {m.GetId(), -1, "acting_session_id"}} {
		_, err := h.queue.SendEnqueuedMessageNow(t.Context(), &queuev1.SendEnqueuedMessageNowRequest{SessionId: "5", MessageId: tc.message, ActingSessionId: tc.acting})
		require.Equal(t, codes.InvalidArgument, status.Code(err), "send now %+v: %v", tc, err)
		require.Contains(t, status.Convert(err).Message(), tc.field)
		_, err = h.queue.InterruptWithEnqueuedMessage(t.Context(), &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "5", MessageId: tc.message, ActingSessionId: tc.acting})
		require.Equal(t, codes.InvalidArgument, status.Code(err), "interrupt %+v: %v", tc, err)
		require.Contains(t, status.Convert(err).Message(), tc.field)
	}
	require.Equal(t, map[string]int{"pending": 1}, h.byStatus(t, 5), "nothing was sent")
	require.Empty(t, h.log.with("lineage.", "lifecycle.DeliverTurn", "runner."), "nothing reached another service")
}

// A notice to a failed session is queued, not refused (QU-21): the spec's
// poller queues the row and marks the PR notified whatever the session's
// state short of archived, and the message stays pending on the failed
// session until a restart's turn takes it or an archive retires it (where
// the forced-archive exemption applies). A caller's follow-up to it is
// still refused; an archived session's notice is refused as before.
func TestANoticeToAFailedSessionIsQueued(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	notice := &queuev1.QueueNoticeRequest{SessionId: 4, Kind: queuev1.NoticeKind_NOTICE_KIND_PR_MERGED,
		Content: "Your pull request was merged.", IdempotencyKey: "github:acme/app#7:merged"}
	resp, err := h.internal.QueueNotice(t.Context(), notice)
	require.NoError(t, err)
	require.Equal(t, queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, resp.GetOutcome())
	m := resp.GetEnqueuedMessage()
	require.Equal(t, "pending", m.GetStatus())
	require.Equal(t, string(domain.OriginAutomatedPRMerged), m.GetOrigin())
	require.Empty(t, h.callsTo(4), "nothing delivers to a failed session")

	again, err := h.internal.QueueNotice(t.Context(), notice)
	require.NoError(t, err)
	require.Equal(t, m.GetId(), again.GetEnqueuedMessage().GetId(), "queued once under its key")
	require.Len(t, h.list(t, 4), 1)

	_, err = h.queue.FollowUp(t.Context(), &queuev1.FollowUpRequest{SessionId: "4", Prompt: "carry on"})
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "a caller is told to restart it: %v", err)
	notice.SessionId, notice.IdempotencyKey = 3, "github:acme/app#8:merged"
	_, err = h.internal.QueueNotice(t.Context(), notice)
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "an archived session takes no notice: %v", err)
}
