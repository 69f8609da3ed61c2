package mcp_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	"github.com/zimmerhq/zimmer/gateway/internal/queuefake"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
)

// Issue 23 rule 15: manage_enqueued_messages gets one message, reorders,
// pages the list (per_page, status) and stages and sends in one send_now.
func TestManageEnqueuedMessagesGetReorderPageAndStagedSendNow(t *testing.T) {
	t.Parallel()
	b, queue := setupQueue(t)
	c := b.connect(t, "/?tool_groups=sessions")
	queue.Handle("EnqueueMessage", queuefake.Enqueues())
	second := queuefake.Message(2, 7, 2, "second")
	queue.Answer("GetEnqueuedMessage", &queuev1.GetEnqueuedMessageResponse{EnqueuedMessage: second}, nil)
	moved := queuefake.Message(2, 7, 1, "second")
	queue.Answer("UpdateEnqueuedMessage", &queuev1.UpdateEnqueuedMessageResponse{EnqueuedMessage: moved}, nil)
	sent := queuefake.Sent(queuefake.Message(3, 7, 3, "do this now"))
	queue.Answer("SendEnqueuedMessageNow", &queuev1.SendEnqueuedMessageNowResponse{EnqueuedMessage: sent, Delivered: true}, nil)
	for _, content := range []string{"first", "second"} {
		res := call(t, c, "manage_enqueued_messages", map[string]any{"action": "create", "session_id": 7, "content": content})
		require.False(t, res.IsError, textOf(res))
	}

	res := call(t, c, "manage_enqueued_messages", map[string]any{"action": "get", "session_id": 7, "message_id": 2})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeQueuedMessage), "message 2, origin caller: second")
	require.True(t, proto.Equal(&queuev1.GetEnqueuedMessageRequest{SessionId: "7", MessageId: 2}, queue.Calls("GetEnqueuedMessage")[0].Request))

	res = call(t, c, "manage_enqueued_messages", map[string]any{"action": "reorder", "session_id": 7, "message_id": 2, "position": 1})
	require.False(t, res.IsError, textOf(res))
	requireShape(t, res, mcp.OutcomeMessageMoved)
	res = call(t, c, "manage_enqueued_messages", map[string]any{"action": "reorder", "session_id": 7, "message_id": 2})
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), "reorder needs position")

	res = call(t, c, "manage_enqueued_messages", map[string]any{"action": "list", "session_id": 7, "per_page": 50, "page": 1, "status": "pending"})
	require.False(t, res.IsError, textOf(res))
	list := queue.Calls("ListEnqueuedMessages")
	require.True(t, proto.Equal(&queuev1.ListEnqueuedMessagesRequest{SessionId: "7", PerPage: 50, Page: 1, Status: []string{"pending"}},
		list[len(list)-1].Request), "%v", list[len(list)-1].Request)

	res = call(t, c, "manage_enqueued_messages", map[string]any{"action": "send_now", "session_id": 7, "content": "do this now", "goal": "ship"})
	require.False(t, res.IsError, textOf(res))
	require.Contains(t, requireShape(t, res, mcp.OutcomeMessageSent), "\nMessage 3 was queued for session 7, then sent now.\n")
	created := queue.Calls("EnqueueMessage")
	require.True(t, proto.Equal(&queuev1.EnqueueMessageRequest{SessionId: "7", Content: "do this now", Goal: "ship"}, created[len(created)-1].Request))
	require.True(t, proto.Equal(&queuev1.SendEnqueuedMessageNowRequest{SessionId: "7", MessageId: 3}, queue.Calls("SendEnqueuedMessageNow")[0].Request))
}
