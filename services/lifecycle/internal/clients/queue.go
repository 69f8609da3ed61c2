package clients

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

// Queue is the archive guard's side in the queue: its SealQueue and
// UnsealQueue (app.QueueSealer).
type Queue struct {
	Client queuev1.QueueServiceClient
	// Timeout bounds one call.
	Timeout time.Duration
}

var _ app.QueueSealer = Queue{}

// SealQueue implements app.QueueSealer.
//
// Another archive attempt's seal (Aborted) is waited out for a while: it
// ends within moments, when that archive commits (its retirement, relayed
// to the queue, turns the seal into one a later archive takes over — the
// case of an archive, an unarchive and an archive again in quick
// succession) or when it does not (it unseals).
func (q Queue) SealQueue(ctx context.Context, sessionID int64, attemptID string, force bool) (app.QueueSeal, error) {
	wait, deadline := 50*time.Millisecond, time.Now().Add(sealPatience)
	for {
		resp, err := q.sealOnce(ctx, sessionID, attemptID, force)
		if status.Code(err) != codes.Aborted || time.Now().After(deadline) {
			if err != nil {
				return app.QueueSeal{}, fmt.Errorf("seal session %d's queue: %w", sessionID, err)
			}
			return app.QueueSeal{Refusal: resp.GetRefusal(), RetirementClause: resp.GetRetirementClause()}, nil
		}
		select {
		case <-ctx.Done():
			return app.QueueSeal{}, fmt.Errorf("seal session %d's queue: %w (%w)", sessionID, ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// sealPatience bounds waiting out another archive attempt's seal.
const sealPatience = 10 * time.Second

func (q Queue) sealOnce(ctx context.Context, sessionID int64, attemptID string, force bool) (*queuev1.SealQueueResponse, error) {
	ctx, cancel := q.bound(ctx)
	defer cancel()
	return q.Client.SealQueue(ctx, &queuev1.SealQueueRequest{SessionId: sessionID, AttemptId: attemptID, Force: force})
}

// UnsealQueue implements app.QueueSealer.
func (q Queue) UnsealQueue(ctx context.Context, sessionID int64, attemptID string) error {
	ctx, cancel := q.bound(ctx)
	defer cancel()
	if _, err := q.Client.UnsealQueue(ctx, &queuev1.UnsealQueueRequest{SessionId: sessionID, AttemptId: attemptID}); err != nil {
		return fmt.Errorf("unseal session %d's queue: %w", sessionID, err)
	}
	return nil
}

func (q Queue) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if q.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, q.Timeout)
}

var _ app.WakeDelivery = Queue{}

// DeliverWake implements app.WakeDelivery through the queue's FollowUp,
// called as the lifecycle service: a turn now for an idle session, queued
// behind a running one's. The key makes a retry deliver nothing more.
func (q Queue) DeliverWake(ctx context.Context, sessionID int64, prompt, key string) (bool, error) {
	ctx, cancel := q.bound(ctx)
	defer cancel()
	resp, err := q.Client.FollowUp(ctx, &queuev1.FollowUpRequest{
		SessionId: strconv.FormatInt(sessionID, 10), Prompt: prompt, IdempotencyKey: key,
	})
	switch status.Code(err) {
	case codes.OK:
		return resp.GetOutcome() == queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, nil
	case codes.FailedPrecondition:
		return false, fmt.Errorf("%w: %s", app.ErrWakeRefused, status.Convert(err).Message())
	}
	return false, fmt.Errorf("follow up session %d: %w", sessionID, err)
}

var _ app.PendingMessages = Queue{}

// HasPendingMessages implements app.PendingMessages through the queue's
// ListEnqueuedMessages, called as the lifecycle service: a message pending
// or processing is still to be delivered.
func (q Queue) HasPendingMessages(ctx context.Context, sessionID int64) (bool, error) {
	ctx, cancel := q.bound(ctx)
	defer cancel()
	resp, err := q.Client.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{
		SessionId: strconv.FormatInt(sessionID, 10), Status: []string{"pending", "processing"}, PerPage: 1,
	})
	if err != nil {
		return false, fmt.Errorf("list session %d's queued messages: %w", sessionID, err)
	}
	// The statuses are checked all the same: a queue that predates the
	// filter answers every message, unpaged.
	for _, m := range resp.GetEnqueuedMessages() {
		if s := m.GetStatus(); s == "pending" || s == "processing" {
			return true, nil
		}
	}
	return false, nil
}

var _ app.NoticeQueue = Queue{}

// noticeKinds are the queue's names of the notices' kinds.
var noticeKinds = map[domain.NoticeKind]queuev1.NoticeKind{
	domain.NoticePRMerged:      queuev1.NoticeKind_NOTICE_KIND_PR_MERGED,
	domain.NoticeMergeConflict: queuev1.NoticeKind_NOTICE_KIND_MERGE_CONFLICT,
	domain.NoticeArtifact:      queuev1.NoticeKind_NOTICE_KIND_ARTIFACT,
}

// QueueNotice implements app.NoticeQueue through the queue's QueueNotice,
// keyed by the notice's business key.
func (q Queue) QueueNotice(ctx context.Context, sessionID int64, n domain.Notice) error {
	kind, ok := noticeKinds[n.Kind]
	if !ok {
		return fmt.Errorf("queue a notice of kind %q: the queue knows no such kind", n.Kind)
	}
	ctx, cancel := q.bound(ctx)
	defer cancel()
	_, err := q.Client.QueueNotice(ctx, &queuev1.QueueNoticeRequest{SessionId: sessionID, Kind: kind, Content: n.Content, IdempotencyKey: n.Key})
	if err != nil {
		return fmt.Errorf("queue notice %s for session %d: %w", n.Key, sessionID, err)
	}
	return nil
}
