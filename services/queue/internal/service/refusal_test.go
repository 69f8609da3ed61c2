package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcstatus"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/queue/internal/config"
)

// Issue 20 item 3: text that is blank after trimming is refused wherever a
// message's text is taken (enqueue, edit, follow-up), as InvalidArgument
// naming the field; nothing is queued and nothing reaches lifecycle.
func TestBlankTextIsRefused(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	ctx := t.Context()
	for _, blank := range []string{" ", " \n\t", "\n\r\t", "\u00a0\u3000"} {
		_, err := h.queue.FollowUp(ctx, &queuev1.FollowUpRequest{SessionId: "1", Prompt: blank})
		requireCode(t, codes.InvalidArgument, err)
		require.Contains(t, status.Convert(err).Message(), "prompt: is blank (only white space)")
		_, err = h.queue.FollowUp(ctx, &queuev1.FollowUpRequest{SessionId: "2", Prompt: blank, ForceImmediate: true})
		requireCode(t, codes.InvalidArgument, err)
		_, err = h.queue.EnqueueMessage(ctx, &queuev1.EnqueueMessageRequest{SessionId: "1", Content: blank})
		requireCode(t, codes.InvalidArgument, err)
		require.Contains(t, status.Convert(err).Message(), "content: is blank (only white space)")
	}
	m := h.enqueue(t, 2, "queued")
	_, err := h.queue.UpdateEnqueuedMessage(ctx, &queuev1.UpdateEnqueuedMessageRequest{SessionId: "2", MessageId: m.GetId(), Content: ptr(" \n\t")})
	requireCode(t, codes.InvalidArgument, err)
	require.Equal(t, "queued", h.messages(t, 2)[m.GetId()].GetContent(), "the refused edit changed nothing")
	require.Len(t, h.list(t, 1), 0, "nothing queued")
	require.Len(t, h.list(t, 2), 1, "nothing queued but the one message")
	require.Empty(t, h.lifecycle.deliverCalls(), "nothing reached lifecycle")
	require.Empty(t, h.runner.interrupts(), "no turn was halted")
}

// A blank message queued before blank text was refused can never be a
// turn: whatever meets it marks it undelivered with the reason, instead of
// leaving it pending for ever (send now and interrupt answer why, a turn
// end hands over the next message instead).
func TestABlankMessageAlreadyQueuedIsMarkedUndelivered(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	ctx := t.Context()

	idle := h.queuedBlank(t, 1)
	_, err := h.queue.SendEnqueuedMessageNow(ctx, &queuev1.SendEnqueuedMessageNowRequest{SessionId: "1", MessageId: idle.GetId()})
	requireCode(t, codes.FailedPrecondition, err)
	require.Contains(t, status.Convert(err).Message(), "can never be delivered: its content is blank")
	require.Equal(t, "undelivered", h.messages(t, 1)[idle.GetId()].GetStatus())
	require.Empty(t, h.callsTo(1), "lifecycle was never asked to run a blank turn")
	h.requireUndeliveredBecause(t, idle.GetId(), "its content is blank (only white space), and a turn's prompt must carry text")
	require.Equal(t, "its content is blank (only white space), and a turn's prompt must carry text",
		h.messages(t, 1)[idle.GetId()].GetUndeliveredReason(), "the list says why")

	running := h.queuedBlank(t, 2)
	_, err = h.queue.InterruptWithEnqueuedMessage(ctx, &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "2", MessageId: running.GetId()})
	requireCode(t, codes.FailedPrecondition, err)
	require.Empty(t, h.runner.interrupts(), "nothing to put in its place: the turn runs on")
	require.Equal(t, "undelivered", h.messages(t, 2)[running.GetId()].GetStatus())

	blank, next := h.queuedBlank(t, 2), h.enqueue(t, 2, "next")
	resp, err := h.internal.DeliverNextMessage(ctx, &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: "job-2"})
	require.NoError(t, err)
	require.True(t, resp.GetDelivered())
	require.Equal(t, next.GetId(), resp.GetEnqueuedMessage().GetId(), "the turn end hands over the next message")
	ms := h.messages(t, 2)
	require.Equal(t, "undelivered", ms[blank.GetId()].GetStatus())
	require.Equal(t, "sent", ms[next.GetId()].GetStatus())
	require.Equal(t, []string{"next"}, prompts(h.callsTo(2)))
}

// Issue 20 item 4: a refusal by a service the queue calls comes out of the
// queue with the same class of code and the callee's words, never as
// Internal (an interrupt or send now with acting_session_id -1 was a 500:
// lineage answered InvalidArgument).
func TestACalleesRefusalIsPassedOn(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	ctx := t.Context()
	// The queue now refuses a negative id itself (domain.CheckPick), so
	// lineage refuses a well-formed one here: its answer is what must pass.
	h.lineage.refuseWith(grpcstatus.InvalidArgument(validation.Invalid("acting_session_id", "must be a session in the tree")))
	a := h.enqueue(t, 2, "a")
	_, err := h.queue.InterruptWithEnqueuedMessage(ctx, &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "2", MessageId: a.GetId(), ActingSessionId: 1})
	requireCode(t, codes.InvalidArgument, err)
	require.Equal(t, "acting_session_id: must be a session in the tree", status.Convert(err).Message())
	_, err = h.queue.SendEnqueuedMessageNow(ctx, &queuev1.SendEnqueuedMessageNowRequest{SessionId: "2", MessageId: a.GetId(), ActingSessionId: 1})
	requireCode(t, codes.InvalidArgument, err)
	require.Equal(t, "pending", h.messages(t, 2)[a.GetId()].GetStatus(), "nothing was sent")
	h.lineage.refuseWith(nil)

	for _, tc := range []struct {
		code codes.Code
		why  string
	}{
		{codes.FailedPrecondition, "session 1 is blocked"},
		{codes.NotFound, "no session 1"},
		{codes.InvalidArgument, "goal: is longer than 50000 characters"},
	} {
		h.lifecycle.setDeliverHook(func(*lifecyclev1.DeliverTurnRequest) error { return status.Error(tc.code, tc.why) })
		b := h.enqueue(t, 1, "b")
		_, err := h.queue.SendEnqueuedMessageNow(ctx, &queuev1.SendEnqueuedMessageNowRequest{SessionId: "1", MessageId: b.GetId()})
		requireCode(t, tc.code, err)
		require.Equal(t, tc.why, status.Convert(err).Message())
		_, err = h.queue.FollowUp(ctx, &queuev1.FollowUpRequest{SessionId: "1", Prompt: "c"})
		requireCode(t, tc.code, err)
		require.Equal(t, "pending", h.messages(t, 1)[b.GetId()].GetStatus())
	}
}

// Issue 20 item 14: a drain whose session lifecycle no longer knows
// (hard-deleted) ends at its first attempt, on the real Temporal server,
// and the session's queued messages end undelivered saying why.
func TestADrainOfADeletedSessionEndsAtOnce(t *testing.T) {
	t.Parallel()
	addr := servicetest.TemporalAddress(t)
	namespace := servicetest.TemporalNamespace(t, addr)
	h := startHarnessWith(t, func(c *config.Config) {
		c.TemporalAddress, c.TemporalNamespace = addr, namespace
		c.DrainDelay = time.Second
	}, roster()...)

	// Running: the enqueue's poke finds the session busy and ends.
	a, b := h.enqueue(t, 2, "a"), h.enqueue(t, 2, "b")
	h.lifecycle.remove(2)
	require.NoError(t, h.effect(t, 2, drainEffect("needs_input")))
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, h.svc.Pool.QueryRow(t.Context(),
			`SELECT count(*) FROM enqueued_messages WHERE session_id = 2 AND status = 'undelivered'`).Scan(&n))
		return n == 2
	}, 20*time.Second, 100*time.Millisecond, "the drain never marked the deleted session's messages undelivered")
	for _, m := range []*queuev1.EnqueuedMessage{a, b} {
		h.requireUndeliveredBecause(t, m.GetId(), "the session no longer exists (it was deleted) while the message was queued")
	}
	// Give a retrying drain the time to try again: it must not.
	time.Sleep(3 * time.Second)
	attempts := len(h.log.with("lifecycle.RecordDrainAttempt 2"))
	require.LessOrEqual(t, attempts, 2, "one attempt per drain run (the enqueue's and the effect's pokes), never a retry: %v",
		h.log.with("lifecycle.RecordDrainAttempt"))
	require.Empty(t, h.notification.raised(), "nobody is paged about a deleted session")
}

// queuedBlank is a message of the session whose content is blank, as one
// queued before blank text was refused.
func (h *harness) queuedBlank(t *testing.T, session int64) *queuev1.EnqueuedMessage {
	t.Helper()
	m := h.enqueue(t, session, "to be blanked")
	_, err := h.svc.Pool.Exec(t.Context(), `UPDATE enqueued_messages SET content = $2 WHERE id = $1`, m.GetId(), " \n\t")
	require.NoError(t, err)
	return m
}

// requireUndeliveredBecause reads why message id ended undelivered.
func (h *harness) requireUndeliveredBecause(t *testing.T, id int64, reason string) {
	t.Helper()
	var got string
	require.NoError(t, h.svc.Pool.QueryRow(t.Context(),
		`SELECT coalesce(undelivered_reason, '') FROM enqueued_messages WHERE id = $1 AND status = 'undelivered'`, id).Scan(&got))
	require.Equal(t, reason, got, "message %d", id)
}

func prompts(calls []*lifecyclev1.DeliverTurnRequest) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.GetPrompt()
	}
	return out
}

func ptr[T any](v T) *T { return &v }
