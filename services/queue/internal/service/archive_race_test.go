package service_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
	"github.com/zimmerhq/zimmer/services/queue/internal/store"
)

func TestConcurrentEnqueuesNumberTheQueueWithoutGaps(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	const n = 100
	ids := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := h.queue.EnqueueMessage(t.Context(), &queuev1.EnqueueMessageRequest{SessionId: "2", Content: fmt.Sprintf("message %d", i)})
			errs[i] = err
			ids[i] = resp.GetEnqueuedMessage().GetId()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	list := h.list(t, 2)
	require.Len(t, list, n)
	seen := map[int64]bool{}
	for i, m := range list {
		require.Equal(t, int32(i+1), m.GetPosition(), "positions are 1..%d in order, without gaps or repeats", n)
		seen[m.GetId()] = true
	}
	for _, id := range ids {
		require.True(t, seen[id], "message %d is in the queue", id)
	}
}

// enqueueOutcome is what a stream of enqueues onto one session came to.
type enqueueOutcome struct {
	mu       sync.Mutex
	accepted []int64
	refused  []error
	other    []error
}

func (o *enqueueOutcome) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.accepted)
}

func (o *enqueueOutcome) add(resp *queuev1.EnqueueMessageResponse, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err == nil:
		o.accepted = append(o.accepted, resp.GetEnqueuedMessage().GetId())
	case status.Code(err) == codes.FailedPrecondition:
		o.refused = append(o.refused, err)
	default:
		o.other = append(o.other, err)
	}
}

// enqueueUntilRefused runs writers goroutines that enqueue onto session
// until each has been refused (or, for a session never archived, until
// stop closes), and returns what came of every call.
func enqueueUntilRefused(t *testing.T, h *harness, session int64, writers int, stop <-chan struct{}) (*enqueueOutcome, *sync.WaitGroup) {
	t.Helper()
	out := &enqueueOutcome{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := h.queue.EnqueueMessage(t.Context(), &queuev1.EnqueueMessageRequest{
					SessionId: strconv.FormatInt(session, 10), Content: fmt.Sprintf("writer %d, message %d", w, i)})
				out.add(resp, err)
				if err != nil {
					return
				}
			}
		}()
	}
	return out, &wg
}

// An archive racing enqueuers: every enqueue either committed before the
// seal, and the archive retired it (undelivered), or was refused. Nothing
// is left pending on the archived session, and a session beside it that
// was never archived keeps every message it took.
func TestArchiveRacingEnqueuersLeavesNothingPending(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// guarded: lifecycle's guarded archive (seal, commit, retire);
		// otherwise the system archive (commit, retire; no seal).
		guarded bool
	}{{"guarded archive, forced", true}, {"system archive", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := startHarness(t,
				&fakeSession{ID: 1, Status: rules.StatusWaiting},
				&fakeSession{ID: 2, Status: rules.StatusWaiting},
				&fakeSession{ID: 3, Status: rules.StatusWaiting},
			)
			// Each enqueue acts on a status read 20ms earlier, so some read
			// "waiting" and reach the queue after the archive: the queue's
			// seal, not lifecycle's status, must refuse them.
			h.lifecycle.setReadDelay(20 * time.Millisecond)
			stopBystander := make(chan struct{})
			archived, archivedWriters := enqueueUntilRefused(t, h, 1, 8, nil)
			bystander, bystanderWriters := enqueueUntilRefused(t, h, 2, 2, stopBystander)
			// Session 3's archive is refused by the guard mid-stream.
			spared, sparedWriters := enqueueUntilRefused(t, h, 3, 4, stopBystander)

			// Let the writers get going, then archive sessions 1 and 3 under
			// them.
			require.Eventually(t, func() bool {
				return archived.count() >= 20 && spared.count() >= 5
			}, 30*time.Second, 5*time.Millisecond)
			refused, err := h.internal.SealQueue(t.Context(), &queuev1.SealQueueRequest{SessionId: 3, AttemptId: "refused-attempt"})
			require.NoError(t, err)
			require.NotEmpty(t, refused.GetRefusal(), "an archive without force over a live queue is refused")
			_, err = h.internal.UnsealQueue(t.Context(), &queuev1.UnsealQueueRequest{SessionId: 3, AttemptId: "refused-attempt"})
			require.NoError(t, err)
			var live int32
			if tc.guarded {
				seal, err := h.internal.SealQueue(t.Context(), &queuev1.SealQueueRequest{SessionId: 1, AttemptId: "archive-attempt", Force: true})
				require.NoError(t, err)
				require.Empty(t, seal.GetRefusal(), "force passes the guard")
				live = seal.GetLiveMessages()
			}
			h.lifecycle.setStatus(1, rules.StatusArchived)
			h.retire(t, 1, tc.guarded, time.Now())
			archivedWriters.Wait()
			close(stopBystander)
			bystanderWriters.Wait()
			sparedWriters.Wait()

			require.Empty(t, archived.other, "every enqueue was accepted or refused as FailedPrecondition")
			require.Len(t, archived.refused, 8, "each writer ran until refused")
			for _, err := range archived.refused {
				msg := status.Convert(err).Message()
				require.True(t, strings.Contains(msg, "archived") || strings.Contains(msg, "being archived"), msg)
			}
			ms := h.messages(t, 1)
			require.Len(t, ms, len(archived.accepted), "every accepted message is in the queue, and nothing else")
			for _, id := range archived.accepted {
				require.Equal(t, "undelivered", ms[id].GetStatus(), "message %d was accepted before the archive, so it was retired", id)
				require.NotNil(t, ms[id].GetUndeliveredAt())
			}
			if tc.guarded {
				require.Equal(t, int32(len(archived.accepted)), live, "the seal saw exactly the messages the archive retired")
			}

			require.Empty(t, bystander.other)
			require.Empty(t, bystander.refused)
			require.Equal(t, map[string]int{"pending": len(bystander.accepted)}, h.byStatus(t, 2), "the session never archived keeps its queue")
			require.Empty(t, spared.other, "a refused archive's brief seal refuses enqueues as FailedPrecondition, nothing else")
			require.Equal(t, map[string]int{"pending": len(spared.accepted)}, h.byStatus(t, 3), "the refused archive retired nothing")
			_, err = h.queue.EnqueueMessage(t.Context(), &queuev1.EnqueueMessageRequest{SessionId: "3", Content: "after the refused archive"})
			require.NoError(t, err, "the refused archive left the queue open")

			// Redelivery of the effect changes nothing.
			h.retire(t, 1, tc.guarded, time.Now())
			require.Equal(t, map[string]int{"undelivered": len(archived.accepted)}, h.byStatus(t, 1))
		})
	}
}

// An archive refused by the guard, or one that did not commit, unseals:
// the queue takes messages again and nothing became undelivered.
func TestAnArchiveThatDoesNotHappenLeavesTheQueueOpen(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	first := h.enqueue(t, 1, "What do you mean I pulled yellow onion? I didn't do that, add it back")

	seal, err := h.internal.SealQueue(t.Context(), &queuev1.SealQueueRequest{SessionId: 1, AttemptId: "a1"})
	require.NoError(t, err)
	require.Equal(t, domain.ArchiveRefusal(1, []domain.Message{{Content: first.GetContent()}}), seal.GetRefusal())
	require.Equal(t, int32(1), seal.GetLiveMessages())
	require.Empty(t, seal.GetRetirementClause())
	second := h.enqueue(t, 1, "after the refusal")
	require.Equal(t, int32(2), second.GetPosition(), "the refused archive left the queue open")
	_, err = h.internal.UnsealQueue(t.Context(), &queuev1.UnsealQueueRequest{SessionId: 1, AttemptId: "a1"})
	require.NoError(t, err, "lifecycle's unseal after a refusal is harmless")

	// Forced, but the archive's commit fails: lifecycle unseals its attempt.
	seal, err = h.internal.SealQueue(t.Context(), &queuev1.SealQueueRequest{SessionId: 1, AttemptId: "a2", Force: true})
	require.NoError(t, err)
	require.Empty(t, seal.GetRefusal())
	require.Equal(t, domain.RetirementClause([]domain.Message{{Content: first.GetContent()}, {Content: "after the refusal"}}), seal.GetRetirementClause())
	_, err = h.queue.EnqueueMessage(t.Context(), &queuev1.EnqueueMessageRequest{SessionId: "1", Content: "while sealed", ActingSessionId: 9})
	requireCode(t, codes.FailedPrecondition, err)
	require.Len(t, h.lineage.retracted(), 1, "the refused enqueue's uncle edge is retracted")
	handOver, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 1, FromJobId: "job"})
	require.NoError(t, err)
	require.False(t, handOver.GetDelivered(), "a sealed queue delivers nothing")
	// Another attempt's unseal does not open it.
	_, err = h.internal.UnsealQueue(t.Context(), &queuev1.UnsealQueueRequest{SessionId: 1, AttemptId: "someone else"})
	require.NoError(t, err)
	_, err = h.queue.EnqueueMessage(t.Context(), &queuev1.EnqueueMessageRequest{SessionId: "1", Content: "still sealed"})
	requireCode(t, codes.FailedPrecondition, err)
	_, err = h.internal.UnsealQueue(t.Context(), &queuev1.UnsealQueueRequest{SessionId: 1, AttemptId: "a2"})
	require.NoError(t, err)

	h.enqueue(t, 1, "after the failed archive")
	require.Equal(t, map[string]int{"pending": 3}, h.byStatus(t, 1), "nothing became undelivered")
	require.Empty(t, h.notification.raised())
}

// Retirement pages once per session over a caller's message; a forced
// archive of nothing but a PR-merged notice does not page (the guard showed
// it), while the system archive of one does; reopening leaves the retired
// messages undelivered and takes new ones.
func TestRetirementAlertsAndReopening(t *testing.T) {
	t.Parallel()
	h := startHarness(t,
		&fakeSession{ID: 1, Status: rules.StatusWaiting},
		&fakeSession{ID: 2, Status: rules.StatusWaiting},
		&fakeSession{ID: 3, Status: rules.StatusWaiting},
		&fakeSession{ID: 4, Status: rules.StatusWaiting},
	)
	// Automated notices are queued by the queue's own pollers, never through
	// the API: insert them through the store.
	messages := store.NewMessages(h.svc.Pool, clock.System{})
	notice := func(session int64) {
		_, _, err := messages.Enqueue(t.Context(), domain.NewMessage{SessionID: session, Origin: domain.OriginAutomatedPRMerged,
			Content: "Your PR was merged."})
		require.NoError(t, err)
	}
	alertsFor := func(session int64) int {
		n := 0
		for _, a := range h.notification.raised() {
			if a.GetDedupKey() == fmt.Sprintf("queue_messages_retired/%d", session) {
				n++
			}
		}
		return n
	}

	// Session 1: two caller messages and a notice, forced: one alert.
	h.enqueue(t, 1, "first")
	h.enqueue(t, 1, "second")
	notice(1)
	require.Empty(t, h.archive(t, 1, true).GetRefusal())
	require.Equal(t, 1, alertsFor(1), "one alert for the session")
	a := h.notification.raised()[0]
	require.Contains(t, a.GetSummary(), "Session 1 archived — 2 queued messages were never delivered")
	require.Contains(t, a.GetSummary(), "1 PR-merged notice was retired alongside")
	require.Len(t, a.GetDetails().GetFields()["message_ids"].GetListValue().GetValues(), 2)
	require.True(t, a.GetDetails().GetFields()["forced"].GetBoolValue())
	h.retire(t, 1, true, time.Now()) // redelivered
	require.Equal(t, 1, alertsFor(1), "a redelivered retirement pages nothing more")

	// Session 2: one caller message: its own alert.
	h.enqueue(t, 2, "only")
	require.Empty(t, h.archive(t, 2, true).GetRefusal())
	require.Equal(t, 1, alertsFor(2))

	// Session 3: only a PR-merged notice, forced past the guard: no page.
	notice(3)
	seal := h.archive(t, 3, false)
	require.Contains(t, seal.GetRefusal(), "Your PR was merged.", "the guard shows the notice")
	require.Empty(t, h.archive(t, 3, true).GetRefusal())
	require.Equal(t, map[string]int{"undelivered": 1}, h.byStatus(t, 3))
	require.Equal(t, 0, alertsFor(3))

	// Session 4: only a PR-merged notice, the system archive: it pages.
	notice(4)
	h.lifecycle.setStatus(4, rules.StatusArchived)
	h.retire(t, 4, false, time.Now())
	require.Equal(t, 1, alertsFor(4))
	require.Len(t, h.notification.raised(), 3)

	// Unarchive session 1: its queue reopens, its retired messages stay
	// undelivered, and it takes new ones.
	h.lifecycle.setStatus(1, rules.StatusWaiting)
	h.reopen(t, 1, time.Now())
	fresh := h.enqueue(t, 1, "after the unarchive")
	require.Equal(t, int32(1), fresh.GetPosition())
	require.Equal(t, map[string]int{"undelivered": 3, "pending": 1}, h.byStatus(t, 1))
	// An archive effect older than the unarchive, arriving late, retires
	// nothing.
	h.retire(t, 1, true, time.Now().Add(-time.Hour))
	require.Equal(t, map[string]int{"undelivered": 3, "pending": 1}, h.byStatus(t, 1))
	require.Equal(t, 1, alertsFor(1))
}

func TestConsumerRefusesAnEffectItCannotRead(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	h.enqueue(t, 1, "kept")
	err := h.effect(t, 1, retireEffect(true, nil)) // no archived_at
	requireCode(t, codes.InvalidArgument, err)
	require.Contains(t, status.Convert(err).Message(), "archived_at")
	require.Equal(t, map[string]int{"pending": 1}, h.byStatus(t, 1), "nothing retired on an unreadable effect")
	require.NoError(t, h.effect(t, 1, notificationsEffect()))
	require.Equal(t, map[string]int{"pending": 1}, h.byStatus(t, 1))
	// Without Temporal this queue runs no drain: lifecycle keeps the effect
	// of a pause that needs one (a message waits) for a queue that does.
	err = h.effect(t, 1, drainEffect(rules.StatusNeedsInput))
	requireCode(t, codes.Unavailable, err)
}
