package mcp_test

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/lifecyclefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	"github.com/zimmerhq/zimmer/gateway/internal/queuefake"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// setupQueue is setup with the fake queue behind the handler.
func setupQueue(t *testing.T) (*testBundle, *queuefake.Server) {
	t.Helper()
	fake, queue := lifecyclefake.New(), queuefake.New()
	lifecycleConn := grpctest.DialAsService(t, grpctest.Serve(t, fake.Register))
	queueConn := grpctest.DialAsService(t, grpctest.Serve(t, queue.Register))
	logs := &syncBuffer{}
	h := mcp.NewHandler(lifecyclev1.NewLifecycleServiceClient(lifecycleConn), slog.New(slog.NewJSONHandler(logs, nil)),
		mcp.Options{Version: "test", Queue: queuev1.NewQueueServiceClient(queueConn)})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &testBundle{url: ts.URL, fake: fake, logs: logs}, queue
}

// structured is a result's structured content as JSON.
func structured(t *testing.T, res *mcpgo.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// follow_up is the queue's FollowUp: it says in words whether the prompt
// is the session's turn now (REST's 200) or waits in its queue (202).
func TestActionSessionFollowUp(t *testing.T) {
	t.Parallel()
	b, queue := setupQueue(t)
	c := b.connect(t, "/?tool_groups=sessions")

	delivered := &queuev1.FollowUpResponse{
		Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, JobId: "job-1", Message: "Session 7 runs the follow-up as its turn job-1.",
	}
	queue.Answer("FollowUp", delivered, nil)
	res := call(t, c, "action_session", map[string]any{"action": "follow_up", "session_id": 7, "prompt": "go on", "goal": "ship it", "acting_session_id": 3})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeFollowUpDelivered), "\nSession 7 runs the follow-up as its turn job-1.\n")
	require.True(t, strings.HasPrefix(textOf(res), "## Follow-up delivered\n\n- **session_id:** 7\n- **job_id:** job-1\n"), textOf(res))
	require.Contains(t, textOf(res), `"outcome":"delivered"`)
	calls := queue.Calls("FollowUp")
	require.Len(t, calls, 1)
	require.True(t, proto.Equal(&queuev1.FollowUpRequest{SessionId: "7", Prompt: "go on", Goal: "ship it", ActingSessionId: 3}, calls[0].Request),
		"%v", calls[0].Request)
	require.Empty(t, b.fake.Calls(), "a follow-up is the queue's, not lifecycle's")
	require.Equal(t, surface.MCP, calls[0].Surface)

	queue.Answer("FollowUp", &queuev1.FollowUpResponse{ // the session runs a turn
		Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, Message: queuefake.QueuedMessage,
		EnqueuedMessage: queuefake.Message(1, 8, 1, "after this turn"),
	}, nil)
	res = call(t, c, "action_session", map[string]any{"action": "follow_up", "session_id": "worker", "prompt": "after this turn", "idempotency_key": "k"})
	require.False(t, res.IsError, textOf(res))
	// The spec's words, after the message's fields.
	require.True(t, strings.HasPrefix(requireShape(t, res, mcp.OutcomeMessageQueued), "\n"+queuefake.QueuedMessage+"\n"), textOf(res))
	require.True(t, strings.HasPrefix(textOf(res), "## Message queued\n\n- **id:** 1\n- **session_id:** 8\n- **position:** 1\n- **status:** pending\n"),
		textOf(res))
	require.Equal(t, "queued", structured(t, res)["outcome"])
	require.Equal(t, "k", queue.Calls("FollowUp")[1].Request.(*queuev1.FollowUpRequest).GetIdempotencyKey())

	queue.Answer("FollowUp", delivered, nil)
	res = call(t, c, "action_session", map[string]any{"action": "follow_up", "session_id": "worker", "prompt": "now", "force_immediate": true})
	require.False(t, res.IsError, textOf(res))
	require.Equal(t, "delivered", structured(t, res)["outcome"])

	for _, tc := range []struct {
		args map[string]any
		fail error
		want string
	}{
		{map[string]any{"prompt": 5, "force_immediate": "yes"}, nil,
			"invalid arguments: prompt must be a string; force_immediate must be true or false"},
		{map[string]any{"prompt": "x"}, status.Error(codes.FailedPrecondition, "session #7 failed; restart it first (action restart)"),
			"session #7 failed; restart it first (action restart)"},
		{map[string]any{"prompt": "x"}, status.Error(codes.Unavailable, "connection refused"), "the queue service is unavailable; retry shortly"},
	} {
		queue.FailWith(tc.fail)
		before := len(queue.Calls())
		tc.args["action"], tc.args["session_id"] = "follow_up", "7"
		res := call(t, c, "action_session", tc.args)
		require.True(t, res.IsError, textOf(res))
		require.True(t, strings.HasPrefix(textOf(res), tc.want), textOf(res))
		if tc.fail == nil {
			require.Len(t, queue.Calls(), before, "refused before the queue was called")
		}
	}
}

func TestManageEnqueuedMessagesSendNowAndInterrupt(t *testing.T) {
	t.Parallel()
	b, queue := setupQueue(t)
	c := b.connect(t, "/?tool_groups=sessions")
	queue.Handle("EnqueueMessage", queuefake.Enqueues())
	for _, content := range []string{"first", "second", "third"} {
		res := call(t, c, "manage_enqueued_messages", map[string]any{"action": "create", "session_id": "7", "content": content})
		require.False(t, res.IsError, textOf(res))
	}

	// Session 7 runs a turn: the message moves to the front.
	queue.Answer("SendEnqueuedMessageNow", &queuev1.SendEnqueuedMessageNowResponse{
		EnqueuedMessage: queuefake.Message(3, 7, 1, "third"), Message: "moved to the front: it is the next turn",
	}, nil)
	res := call(t, c, "manage_enqueued_messages", map[string]any{"action": "send_now", "session_id": "7", "message_id": 3, "acting_session_id": 2})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeMessageFirstInLine), "The session is running, so the message is its next turn")
	require.EqualValues(t, 2, queue.Calls("SendEnqueuedMessageNow")[0].Request.(*queuev1.SendEnqueuedMessageNowRequest).GetActingSessionId())
	require.Equal(t, surface.MCP, queue.Calls("SendEnqueuedMessageNow")[0].Surface, "the queue names the surface on the uncle edge")

	queue.Answer("InterruptWithEnqueuedMessage", &queuev1.InterruptWithEnqueuedMessageResponse{
		EnqueuedMessage: queuefake.Sent(queuefake.Message(3, 7, 0, "third")), Interrupted: true, Message: "delivered as the next turn",
	}, nil)
	res = call(t, c, "manage_enqueued_messages", map[string]any{"action": "interrupt", "session_id": "7", "message_id": 3})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeTurnInterrupted), "The running turn was stopped: the message is the session's turn now.")
	require.Equal(t, true, structured(t, res)["interrupted"])

	// Session 7 is idle: the message is its turn now.
	queue.Answer("SendEnqueuedMessageNow", &queuev1.SendEnqueuedMessageNowResponse{
		EnqueuedMessage: queuefake.Sent(queuefake.Message(1, 7, 0, "first")), Delivered: true, Message: "delivered as the next turn",
	}, nil)
	res = call(t, c, "manage_enqueued_messages", map[string]any{"action": "send_now", "session_id": "7", "message_id": 1})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeMessageSent), "It is the session's turn now.")

	queue.Answer("ListEnqueuedMessages", &queuev1.ListEnqueuedMessagesResponse{EnqueuedMessages: []*queuev1.EnqueuedMessage{
		queuefake.Message(2, 7, 1, "second"), queuefake.Sent(queuefake.Message(3, 7, 0, "third")), queuefake.Sent(queuefake.Message(1, 7, 0, "first")),
	}}, nil)
	res = call(t, c, "manage_enqueued_messages", map[string]any{"action": "list", "session_id": "7"})
	require.Contains(t, textOf(res), "- [#1 pending] message 2, origin caller: second\n- [sent] message 3, origin caller: third\n- [sent] message 1, origin caller: first")

	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"action": "send_now", "session_id": "7", "message_id": 2, "position": 1}, `argument "position" is not read by action send_now`},
		{map[string]any{"action": "interrupt", "session_id": "7", "message_id": 99}, "no such enqueued message"},
	} {
		queue.Answer("InterruptWithEnqueuedMessage", nil, status.Error(codes.NotFound, "no such enqueued message"))
		res := call(t, c, "manage_enqueued_messages", tc.args)
		require.True(t, res.IsError, textOf(res))
		require.Contains(t, textOf(res), tc.want)
	}
}

// get_session shows the session's queue as the gateway fills it in: still
// to be delivered, then undelivered (said in words: never delivered), in
// the markdown and in the JSON; a queue that cannot be asked says so and
// the session still shows.
func TestGetSessionShowsTheQueue(t *testing.T) {
	t.Parallel()
	b, queue := setupQueue(t)
	c := b.connect(t, "/?tool_groups=sessions")
	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 7, Status: "archived"}}, nil)

	res := call(t, c, "get_session", map[string]any{"session_id": "7"})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, textOf(res), "### Queued messages\n\nNone waiting, and none undelivered.\n")

	// The queue lists what is still to be delivered, then what left it
	// undelivered (an archive retired one); the sent one it leaves out, as
	// the detail asks it to (the status filter, asserted below).
	queue.Answer("ListEnqueuedMessages", &queuev1.ListEnqueuedMessagesResponse{EnqueuedMessages: []*queuev1.EnqueuedMessage{
		queuefake.Message(3, 7, 1, "waiting"), queuefake.Undelivered(queuefake.Message(1, 7, 0, "lost")),
	}}, nil)

	res = call(t, c, "get_session", map[string]any{"session_id": "7"})
	require.False(t, res.IsError, textOf(res))
	text := textOf(res)
	require.Contains(t, text, "### Queued messages\n\n")
	require.Contains(t, text, "- [#1 pending] message 3, origin caller: waiting\n"+
		"- [undelivered: never delivered because the session was archived while the message was queued, retired 2026-01-02T03:04:05Z] "+
		"message 1, origin caller: lost\n")
	require.NotContains(t, text, "origin caller: sent", "a sent message is history, not the session's queue")
	var got []string
	for _, m := range structured(t, res)["enqueued_messages"].([]any) {
		got = append(got, m.(map[string]any)["status"].(string))
	}
	require.Equal(t, []string{"pending", "undelivered"}, got, "the JSON is GetSessionResponse with the queue filled in")
	asked := queue.Calls("ListEnqueuedMessages")[len(queue.Calls("ListEnqueuedMessages"))-1].Request.(*queuev1.ListEnqueuedMessagesRequest)
	require.Equal(t, "7", asked.GetSessionId())
	require.Equal(t, []string{"pending", "processing", "undelivered"}, asked.GetStatus(),
		"a sent message is history, not the session's queue: the detail never asks for it")

	queue.FailWith(status.Error(codes.Unavailable, "down"))
	res = call(t, c, "get_session", map[string]any{"session_id": "7"})
	require.False(t, res.IsError, "the session read does not fail: %s", textOf(res))
	require.Contains(t, textOf(res), "### Queued messages\n\nUnavailable: the queue service could not be asked")
	require.Contains(t, textOf(res), "## Session #7")
	require.Contains(t, b.logs.String(), "session detail without its queued messages: the queue failed")
}

// The tools say what the queue does in words: follow_up's two outcomes
// (REST's 200 and 202), and what force does to an archive now that the
// queue guards it.
func TestToolsDescribeTheQueue(t *testing.T) {
	t.Parallel()
	b, _ := setupQueue(t)
	list, err := b.connect(t, "/").ListTools(t.Context(), mcpgo.ListToolsRequest{})
	require.NoError(t, err)
	described := map[string]mcpgo.Tool{}
	for _, tool := range list.Tools {
		described[tool.Name] = tool
	}
	action := described["action_session"]
	require.Contains(t, action.Description, "follow_up: send the session its next prompt. Delivered now (REST's 200) when the session is idle")
	require.Contains(t, action.Description, "Queued (REST's 202) when it is running")
	require.Contains(t, action.Description, "archive: move to the trash (restorable for 4 days). Refused while messages queued for the session are not delivered: the refusal lists them")
	force := action.InputSchema.Properties["force"].(map[string]any)["description"].(string)
	require.Contains(t, force, "they are retired to undelivered (kept, and listed by get_session as never delivered) and named on the archive line")
	for _, arg := range []string{"prompt", "goal", "force_immediate", "idempotency_key"} {
		require.Contains(t, action.InputSchema.Properties, arg)
	}
	manage := described["manage_enqueued_messages"]
	require.Contains(t, manage.Description, "send_now delivers a pending message now when the session is idle")
	require.Contains(t, manage.Description, "interrupt stops the running turn and delivers the message as the next turn")
}
