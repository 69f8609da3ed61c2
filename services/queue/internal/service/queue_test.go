package service_test

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/queue/internal/config"
	"github.com/zimmerhq/zimmer/services/queue/internal/service"
)

// fakeLifecycle answers GetSession from a fixed roster, by id or slug, and
// records who called it.
type fakeLifecycle struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	sessions []*lifecyclev1.Session
}

func (f *fakeLifecycle) GetSession(_ context.Context, req *lifecyclev1.GetSessionRequest) (*lifecyclev1.GetSessionResponse, error) {
	for _, s := range f.sessions {
		if req.GetSessionId() == strconv.FormatInt(s.GetId(), 10) || req.GetSessionId() == s.GetSlug() {
			return &lifecyclev1.GetSessionResponse{Session: proto.Clone(s).(*lifecyclev1.Session)}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "no session %s", req.GetSessionId())
}

// startQueue runs the real queue service on a fresh database against a
// lifecycle that knows sessions 1 (waiting, slug "one"), 2 (running),
// 3 (archived) and 4 (failed).
func startQueue(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	lifecyclev1.RegisterLifecycleServiceServer(g, &fakeLifecycle{sessions: []*lifecyclev1.Session{
		{Id: 1, Slug: "one", Status: rules.StatusWaiting},
		{Id: 2, Slug: "two", Status: rules.StatusRunning},
		{Id: 3, Slug: "three", Status: rules.StatusArchived},
		{Id: 4, Slug: "four", Status: rules.StatusFailed},
	}})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)

	cfg := config.Config{Config: servicetest.Config(t, service.MigrationSets...), LifecycleAddr: lis.Addr().String()}
	svc := servicetest.New(t, service.New, cfg)
	servicetest.RunInBackground(t, svc.Run)
	return svc.Addr()
}

func TestEnqueueListReorderDelete(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q := queuev1.NewQueueServiceClient(servicetest.DialOperator(t, startQueue(t)))

	var ids []int64
	for _, content := range []string{"first", "second", "third"} {
		resp, err := q.EnqueueMessage(ctx, &queuev1.EnqueueMessageRequest{SessionId: "one", Content: content, ActingSessionId: 2})
		require.NoError(t, err)
		m := resp.GetEnqueuedMessage()
		require.True(t, resp.GetCreated())
		require.Equal(t, int64(1), m.GetSessionId(), "the slug resolved to the session's id")
		require.Equal(t, "caller", m.GetOrigin())
		require.Equal(t, "pending", m.GetStatus())
		require.Equal(t, int64(2), m.GetActingSessionId(), "an operator declares the acting session")
		ids = append(ids, m.GetId())
	}
	// A retried create with the same key queues nothing new.
	first, err := q.EnqueueMessage(ctx, &queuev1.EnqueueMessageRequest{SessionId: "1", Content: "keyed", IdempotencyKey: "k"})
	require.NoError(t, err)
	again, err := q.EnqueueMessage(ctx, &queuev1.EnqueueMessageRequest{SessionId: "1", Content: "keyed", IdempotencyKey: "k"})
	require.NoError(t, err)
	require.False(t, again.GetCreated())
	require.Equal(t, first.GetEnqueuedMessage().GetId(), again.GetEnqueuedMessage().GetId())

	content := "third, edited"
	moved, err := q.UpdateEnqueuedMessage(ctx, &queuev1.UpdateEnqueuedMessageRequest{SessionId: "1", MessageId: ids[2], Content: &content, Position: 1})
	require.NoError(t, err)
	require.Equal(t, int32(1), moved.GetEnqueuedMessage().GetPosition())
	_, err = q.DeleteEnqueuedMessage(ctx, &queuev1.DeleteEnqueuedMessageRequest{SessionId: "1", MessageId: ids[0]})
	require.NoError(t, err)

	list, err := q.ListEnqueuedMessages(ctx, &queuev1.ListEnqueuedMessagesRequest{SessionId: "one"})
	require.NoError(t, err)
	var got []string
	for i, m := range list.GetEnqueuedMessages() {
		require.Equal(t, int32(i+1), m.GetPosition())
		got = append(got, m.GetContent())
	}
	require.Equal(t, []string{"third, edited", "second", "keyed"}, got)

	_, err = q.DeleteEnqueuedMessage(ctx, &queuev1.DeleteEnqueuedMessageRequest{SessionId: "1", MessageId: ids[0]})
	require.Equal(t, codes.NotFound, status.Code(err), "%v", err)
	_, err = q.UpdateEnqueuedMessage(ctx, &queuev1.UpdateEnqueuedMessageRequest{SessionId: "1", MessageId: ids[1], Position: 9})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
}

func TestEnqueueRefusals(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q := queuev1.NewQueueServiceClient(servicetest.DialOperator(t, startQueue(t)))

	_, err := q.EnqueueMessage(ctx, &queuev1.EnqueueMessageRequest{SessionId: "3", Content: "hello"})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "session 3 is archived, so nothing would deliver the message; unarchive it first")
	_, err = q.EnqueueMessage(ctx, &queuev1.EnqueueMessageRequest{SessionId: "four", Content: "hello"})
	require.Equal(t, codes.FailedPrecondition, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "session 4 has failed; restart it (action restart")
	_, err = q.EnqueueMessage(ctx, &queuev1.EnqueueMessageRequest{SessionId: "nope", Content: "hello"})
	require.Equal(t, codes.NotFound, status.Code(err))
	_, err = q.EnqueueMessage(ctx, &queuev1.EnqueueMessageRequest{SessionId: "2", Content: ""})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "content")
	_, err = q.EnqueueMessage(ctx, &queuev1.EnqueueMessageRequest{SessionId: "2", Content: "running is fine"})
	require.NoError(t, err, "a running session queues the message for its next turn")
}

// A session credential queues onto its own session only, as itself (it
// may not declare another); it reads another's queue only with sessions.read.
func TestSessionCredentialActsOnItsOwnQueue(t *testing.T) {
	t.Parallel()
	addr := startQueue(t)
	q := queuev1.NewQueueServiceClient(servicetest.DialAsService(t, addr, "gateway"))
	as := func(p principal.Principal) context.Context {
		ctx, err := principal.Outgoing(t.Context(), p)
		require.NoError(t, err)
		return ctx
	}
	self := as(principal.Principal{Kind: principal.Session, SessionID: 2, Scopes: []string{principal.ScopeSelf}})
	_, err := q.EnqueueMessage(self, &queuev1.EnqueueMessageRequest{SessionId: "two", Content: "note to self", ActingSessionId: 1})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "another acting session is refused, never replaced: %v", err)
	resp, err := q.EnqueueMessage(self, &queuev1.EnqueueMessageRequest{SessionId: "two", Content: "note to self"})
	require.NoError(t, err)
	require.Equal(t, int64(2), resp.GetEnqueuedMessage().GetActingSessionId(), "a credential acts as its own session")

	_, err = q.EnqueueMessage(self, &queuev1.EnqueueMessageRequest{SessionId: "1", Content: "not mine"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "session #2's credential may act only on its own session's queue, not on session 1's")
	_, err = q.ListEnqueuedMessages(self, &queuev1.ListEnqueuedMessagesRequest{SessionId: "1"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = q.DeleteEnqueuedMessage(self, &queuev1.DeleteEnqueuedMessageRequest{SessionId: "1", MessageId: resp.GetEnqueuedMessage().GetId()})
	require.Equal(t, codes.PermissionDenied, status.Code(err))

	reader := as(principal.Principal{Kind: principal.Session, SessionID: 1, Scopes: []string{principal.ScopeSelf, principal.ScopeSessionsRead}})
	list, err := q.ListEnqueuedMessages(reader, &queuev1.ListEnqueuedMessagesRequest{SessionId: "2"})
	require.NoError(t, err)
	require.Len(t, list.GetEnqueuedMessages(), 1)
	_, err = q.EnqueueMessage(reader, &queuev1.EnqueueMessageRequest{SessionId: "2", Content: "reading is not writing"})
	require.Equal(t, codes.PermissionDenied, status.Code(err))
}
