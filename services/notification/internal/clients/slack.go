package clients

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/platform/boundary"
)

// SlackBoundary is the Slack boundary's calls into lifecycle, the queue
// and lineage. Each is made as the notification service acting as itself
// (the connections' identity; no client principal is forwarded) and
// declares the Slack user who spoke as the boundary's actor, which is what
// lineage believes and lifecycle reads the session's genesis from.
type SlackBoundary struct {
	lifecycle  lifecyclev1.LifecycleServiceClient
	queue      queuev1.QueueServiceClient
	provenance lineagev1.ProvenanceServiceClient
}

var _ app.SlackBoundary = (*SlackBoundary)(nil)

// NewSlackBoundary returns the adapter over the three connections.
func NewSlackBoundary(lifecycle, queue, lineage grpc.ClientConnInterface) *SlackBoundary {
	return &SlackBoundary{
		lifecycle:  lifecyclev1.NewLifecycleServiceClient(lifecycle),
		queue:      queuev1.NewQueueServiceClient(queue),
		provenance: lineagev1.NewProvenanceServiceClient(lineage),
	}
}

func asSlackUser(ctx context.Context, slackUserID string) (context.Context, error) {
	return boundary.Outgoing(ctx, boundary.Actor{Kind: boundary.SlackUser, SlackUserID: slackUserID})
}

// refusal is err as app.RefusedError when it is a refusal retrying cannot
// change (the request is wrong, or the session's state refuses it); any
// other error is returned as it is, for the activity to retry.
func refusal(service string, err error) error {
	switch status.Code(err) {
	// AlreadyExists: lineage's refusal of a key that names another message.
	case codes.InvalidArgument, codes.FailedPrecondition, codes.NotFound, codes.PermissionDenied, codes.OutOfRange, codes.AlreadyExists:
		return &app.RefusedError{Reason: status.Convert(err).Message()}
	}
	return fmt.Errorf("%s: %w", service, err)
}

// StartSession implements app.SlackBoundary: CreateSession with the
// trigger's fields and the event's slug; a slug taken already (the start
// retried after it committed) is that session.
func (b *SlackBoundary) StartSession(ctx context.Context, slackUserID string, spec app.StartSpec) (int64, error) {
	ctx, err := asSlackUser(ctx, slackUserID)
	if err != nil {
		return 0, err
	}
	resp, err := b.lifecycle.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{
		Prompt: spec.Prompt, GitRoot: spec.GitRoot, AgentRoot: spec.AgentRoot, AgentRuntime: spec.AgentRuntime, Slug: spec.Slug,
		PushNotifications: &spec.PushNotifications,
	})
	if status.Code(err) == codes.AlreadyExists {
		got, gerr := b.lifecycle.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: spec.Slug})
		if gerr != nil {
			return 0, refusal("lifecycle GetSession", gerr)
		}
		return got.GetSession().GetId(), nil
	}
	if err != nil {
		return 0, refusal("lifecycle CreateSession", err)
	}
	return resp.GetSession().GetId(), nil
}

// FollowUp implements app.SlackBoundary: the answer is the queue's
// message, its words for delivered-now or queued.
func (b *SlackBoundary) FollowUp(ctx context.Context, slackUserID string, sessionID int64, prompt, key string) (bool, string, error) {
	ctx, err := asSlackUser(ctx, slackUserID)
	if err != nil {
		return false, "", err
	}
	resp, err := b.queue.FollowUp(ctx, &queuev1.FollowUpRequest{
		SessionId: strconv.FormatInt(sessionID, 10), Prompt: prompt, IdempotencyKey: key,
	})
	if err != nil {
		return false, "", refusal("queue FollowUp", err)
	}
	return resp.GetOutcome() == queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, resp.GetMessage(), nil
}

// RecordHumanMessage implements app.SlackBoundary.
func (b *SlackBoundary) RecordHumanMessage(ctx context.Context, slackUserID string, m app.SlackHumanMessage) (bool, string, error) {
	ctx, err := asSlackUser(ctx, slackUserID)
	if err != nil {
		return false, "", err
	}
	req := &lineagev1.RecordHumanMessageRequest{
		Provenance: m.Provenance, AuthoredInSessionId: m.SessionID, Content: m.Content, SlackPermalink: m.Permalink,
		IdempotencyKey: m.IdempotencyKey,
	}
	if !m.OccurredAt.IsZero() {
		req.OccurredAt = timestamppb.New(m.OccurredAt.Truncate(time.Microsecond))
	}
	resp, err := b.provenance.RecordHumanMessage(ctx, req)
	if err != nil {
		return false, "", refusal("lineage RecordHumanMessage", err)
	}
	return resp.GetRecorded(), resp.GetNotRecordedReason(), nil
}
