package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// The queue's REST routes reach the queue service with the caller's
// principal, and carry what the request said and nothing it could not say.
func TestEnqueuedMessagesOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	base := "/api/v1/sessions/7/enqueued_messages"
	for _, content := range []string{"first", "second", "third"} {
		resp := b.call(t, http.MethodPost, base, `{"content":"`+content+`","goal":"g","idempotency_key":"k-`+content+`"}`)
		require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
		m := resp.json(t)["enqueued_message"].(map[string]any)
		require.Equal(t, "caller", m["origin"])
	}
	req := b.queue.Calls("EnqueueMessage")[0]
	require.Equal(t, "7", req.Request.(*queuev1.EnqueueMessageRequest).GetSessionId())
	require.Equal(t, "k-first", req.Request.(*queuev1.EnqueueMessageRequest).GetIdempotencyKey())
	require.Equal(t, principal.Operator, req.Principal.Kind, "the gateway forwards who called")

	// origin is settable by no request: the body is refused, nothing queued.
	before := len(b.queue.Calls())
	resp := b.call(t, http.MethodPost, base, `{"content":"x","origin":"automated_pr_merged"}`)
	require.Equal(t, http.StatusBadRequest, resp.status, "%s", resp.body)
	require.Contains(t, resp.errorText(t), "origin")
	require.Len(t, b.queue.Calls(), before)

	resp = b.call(t, http.MethodPatch, base+"/3", `{"position":1,"content":"third, first"}`)
	require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
	require.Equal(t, json.Number("1"), resp.json(t)["enqueued_message"].(map[string]any)["position"])
	resp = b.call(t, http.MethodDelete, base+"/1", "")
	require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)

	resp = b.call(t, http.MethodGet, base, "")
	require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
	var got []any
	for _, m := range resp.json(t)["enqueued_messages"].([]any) {
		got = append(got, m.(map[string]any)["content"])
	}
	require.Equal(t, []any{"third, first", "second"}, got)

	resp = b.call(t, http.MethodDelete, base+"/1", "")
	require.Equal(t, http.StatusNotFound, resp.status, "%s", resp.body)
	require.Equal(t, "no such enqueued message", resp.errorText(t))
	resp = b.call(t, http.MethodDelete, base+"/one", "")
	require.Equal(t, http.StatusBadRequest, resp.status, "a message id is a number: %s", resp.body)
}

func TestManageEnqueuedMessagesOverMCP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	c, err := mcpClient(t, b.url+"/mcp?tool_groups=sessions", testKey)
	require.NoError(t, err)
	call := func(args map[string]any) string {
		t.Helper()
		res, err := c.CallTool(t.Context(), callRequest("manage_enqueued_messages", args))
		require.NoError(t, err)
		require.False(t, res.IsError, textOf(res))
		return textOf(res)
	}
	call(map[string]any{"action": "create", "session_id": 7, "content": "first"})
	call(map[string]any{"action": "create", "session_id": "7", "content": "second", "goal": "ship it"})
	call(map[string]any{"action": "update", "session_id": "7", "message_id": 2, "position": 1})
	text := call(map[string]any{"action": "list", "session_id": "7"})
	require.Contains(t, text, "- [#1 pending] message 2, origin caller: second\n- [#2 pending] message 1, origin caller: first")
	call(map[string]any{"action": "delete", "session_id": "7", "message_id": 1})
	require.Len(t, b.queue.Calls("DeleteEnqueuedMessage"), 1)
	require.EqualValues(t, 1, b.queue.Calls("DeleteEnqueuedMessage")[0].Request.(*queuev1.DeleteEnqueuedMessageRequest).GetMessageId())

	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"action": "create", "session_id": "7", "content": "x", "origin": "automated_pr_merged"}, `unknown argument "origin"`},
		{map[string]any{"action": "list", "session_id": "7", "content": "x"}, `argument "content" is not read by action list`},
		{map[string]any{"action": "purge", "session_id": "7"}, `unknown action "purge"; use one of list, create, update, delete`},
	} {
		before := len(b.queue.Calls())
		res, err := c.CallTool(t.Context(), callRequest("manage_enqueued_messages", tc.args))
		require.NoError(t, err)
		require.True(t, res.IsError)
		require.Contains(t, textOf(res), tc.want)
		require.Len(t, b.queue.Calls(), before, "a refused call reaches nothing")
	}
}
