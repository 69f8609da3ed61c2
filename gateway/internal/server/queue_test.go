package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zimmerhq/zimmer/gateway/internal/queuefake"
	"github.com/zimmerhq/zimmer/gateway/internal/rest"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

// The queue's REST routes reach the queue service with the caller's
// principal, and carry what the request said and nothing it could not say.
func TestEnqueuedMessagesOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	base := "/api/v1/sessions/7/enqueued_messages"
	b.queue.Handle("EnqueueMessage", queuefake.Enqueues())
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
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, "%s", resp.body)
	require.Contains(t, resp.errorText(t), "origin")
	require.Len(t, b.queue.Calls(), before)

	b.queue.Answer("UpdateEnqueuedMessage", &queuev1.UpdateEnqueuedMessageResponse{EnqueuedMessage: queuefake.Message(3, 7, 1, "third, first")}, nil)
	resp = b.call(t, http.MethodPatch, base+"/3", `{"position":1,"content":"third, first"}`)
	require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
	require.Equal(t, json.Number("1"), resp.json(t)["enqueued_message"].(map[string]any)["position"])
	resp = b.call(t, http.MethodDelete, base+"/1", "")
	require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)

	b.queue.Answer("ListEnqueuedMessages", &queuev1.ListEnqueuedMessagesResponse{EnqueuedMessages: []*queuev1.EnqueuedMessage{
		queuefake.Message(3, 7, 1, "third, first"), queuefake.Message(2, 7, 2, "second"),
	}}, nil)
	resp = b.call(t, http.MethodGet, base, "")
	require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
	var got []any
	for _, m := range resp.json(t)["enqueued_messages"].([]any) {
		got = append(got, m.(map[string]any)["content"])
	}
	require.Equal(t, []any{"third, first", "second"}, got)

	b.queue.Answer("DeleteEnqueuedMessage", nil, status.Error(codes.NotFound, "no such enqueued message"))
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
	b.queue.Handle("EnqueueMessage", queuefake.Enqueues())
	call(map[string]any{"action": "create", "session_id": 7, "content": "first"})
	call(map[string]any{"action": "create", "session_id": "7", "content": "second", "goal": "ship it"})
	b.queue.Answer("UpdateEnqueuedMessage", &queuev1.UpdateEnqueuedMessageResponse{EnqueuedMessage: queuefake.Message(2, 7, 1, "second")}, nil)
	call(map[string]any{"action": "update", "session_id": "7", "message_id": 2, "position": 1})
	b.queue.Answer("ListEnqueuedMessages", &queuev1.ListEnqueuedMessagesResponse{EnqueuedMessages: []*queuev1.EnqueuedMessage{
		queuefake.Message(2, 7, 1, "second"), queuefake.Message(1, 7, 2, "first"),
	}}, nil)
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

// follow_up answers 200 when the prompt is the session's turn now and 202
// when it waits in the queue (the response's outcome, set as the status by
// the gateway's forward-response hook); a slug names the session as an id
// does; each body is the one the document describes for its status.
func TestFollowUpOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(b.do(t, http.MethodGet, "/openapi.json", "").body, &doc))
	documented := doc.Paths["/api/v1/sessions/{session_id}/follow_up"]["post"].Responses
	conformsTo := func(resp response, status string) {
		t.Helper()
		var value any
		dec := json.NewDecoder(bytes.NewReader(resp.body))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&value))
		conforms(t, doc, documented[status].Schema, value, "follow_up "+status)
	}

	delivered := &queuev1.FollowUpResponse{
		Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_DELIVERED, JobId: "job-1", Message: "Session 7 runs the follow-up as its turn job-1.",
	}
	b.queue.Answer("FollowUp", delivered, nil)
	resp := b.call(t, http.MethodPost, "/api/v1/sessions/7/follow_up", `{"prompt":"go on","goal":"ship it","acting_session_id":3,"idempotency_key":"k"}`)
	require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
	conformsTo(resp, "200")
	body := resp.json(t)
	require.Equal(t, "delivered", body["outcome"])
	require.Contains(t, body, "uncle_edge")
	require.Nil(t, body["uncle_edge"], "an unset enum is null")
	require.NotContains(t, string(resp.body), "UNSPECIFIED")
	require.NotEmpty(t, body["job_id"])
	calls := b.queue.Calls("FollowUp")
	require.Len(t, calls, 1)
	require.True(t, proto.Equal(&queuev1.FollowUpRequest{SessionId: "7", Prompt: "go on", Goal: "ship it", ActingSessionId: 3, IdempotencyKey: "k"},
		calls[0].Request), "the body reaches the queue as sent: %v", calls[0].Request)
	require.Equal(t, principal.Operator, calls[0].Principal.Kind, "the gateway forwards who called")
	require.Equal(t, surface.REST, calls[0].Surface, "and the surface it came through")

	b.queue.Answer("FollowUp", &queuev1.FollowUpResponse{ // the session runs a turn
		Outcome: queuev1.FollowUpOutcome_FOLLOW_UP_OUTCOME_QUEUED, Message: queuefake.QueuedMessage,
		EnqueuedMessage: queuefake.Message(1, 8, 1, "after this turn"),
	}, nil)
	resp = b.call(t, http.MethodPost, "/api/v1/sessions/the-worker/follow_up", `{"prompt":"after this turn"}`)
	require.Equal(t, http.StatusAccepted, resp.status, "%s", resp.body)
	conformsTo(resp, "202")
	body = resp.json(t)
	require.Equal(t, "queued", body["outcome"])
	require.Equal(t, queuefake.QueuedMessage, body["message"])
	require.Equal(t, "after this turn", body["enqueued_message"].(map[string]any)["content"])
	require.Equal(t, "the-worker", b.queue.Calls("FollowUp")[1].Request.(*queuev1.FollowUpRequest).GetSessionId(), "a slug reaches the queue as given")

	b.queue.Answer("FollowUp", delivered, nil)
	resp = b.call(t, http.MethodPost, "/api/v1/sessions/the-worker/follow_up", `{"prompt":"now","force_immediate":true}`)
	require.Equal(t, http.StatusOK, resp.status, "force_immediate delivers now: %s", resp.body)
	require.Equal(t, "delivered", resp.json(t)["outcome"])

	// Errors keep the gateway's one mapping.
	before := len(b.queue.Calls())
	resp = b.call(t, http.MethodPost, "/api/v1/sessions/7/follow_up", `{"prompt":"x","promt":"y"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, "%s", resp.body)
	require.Contains(t, resp.errorText(t), `promt: is not a field of this request`)
	require.Len(t, b.queue.Calls(), before, "a body that is not the route's reaches nothing")
	b.queue.Answer("FollowUp", nil, status.Error(codes.InvalidArgument, "prompt: is required"))
	resp = b.call(t, http.MethodPost, "/api/v1/sessions/7/follow_up", `{}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, "%s", resp.body)
	_, kind, _ := resp.problem(t)
	require.Equal(t, "Validation failed", kind)

	b.queue.FailWith(status.Error(codes.FailedPrecondition, "session #7 is archived; unarchive it first"))
	resp = b.call(t, http.MethodPost, "/api/v1/sessions/7/follow_up", `{"prompt":"x"}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.status, "%s", resp.body)
	message, kind, _ := resp.problem(t)
	require.Equal(t, "Cannot follow up", kind)
	require.Equal(t, "session #7 is archived; unarchive it first", message)
	b.queue.FailWith(status.Error(codes.Unavailable, "connection refused"))
	resp = b.call(t, http.MethodPost, "/api/v1/sessions/7/follow_up", `{"prompt":"x"}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.status, "%s", resp.body)
	require.Equal(t, "the queue service is unavailable; retry shortly", resp.errorText(t))
}

// send_now delivers to an idle session and moves to the front on a running
// one; interrupt delivers, stopping the turn the session runs. Refusals
// name what was refused.
func TestSendNowAndInterruptOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	base := "/api/v1/sessions/7/enqueued_messages"
	b.queue.Handle("EnqueueMessage", queuefake.Enqueues())
	var ids []string
	for _, content := range []string{"first", "second", "third"} {
		resp := b.call(t, http.MethodPost, base, `{"content":"`+content+`"}`)
		require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
		ids = append(ids, resp.json(t)["enqueued_message"].(map[string]any)["id"].(json.Number).String())
	}

	// Session 7 runs a turn: the message moves to the front.
	b.queue.Answer("SendEnqueuedMessageNow", &queuev1.SendEnqueuedMessageNowResponse{
		EnqueuedMessage: queuefake.Message(3, 7, 1, "third"), Message: "moved to the front: it is the next turn",
	}, nil)
	resp := b.call(t, http.MethodPost, base+"/"+ids[2]+"/send_now", `{"acting_session_id":3}`)
	require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
	require.Equal(t, false, resp.json(t)["delivered"])
	require.Equal(t, json.Number("1"), resp.json(t)["enqueued_message"].(map[string]any)["position"], "the next turn")
	send := b.queue.Calls("SendEnqueuedMessageNow")[0].Request.(*queuev1.SendEnqueuedMessageNowRequest)
	require.Equal(t, "7", send.GetSessionId())
	require.EqualValues(t, 3, send.GetActingSessionId())

	b.queue.Answer("InterruptWithEnqueuedMessage", &queuev1.InterruptWithEnqueuedMessageResponse{
		EnqueuedMessage: queuefake.Sent(queuefake.Message(2, 7, 0, "second")), Interrupted: true, Message: "delivered as the next turn",
	}, nil)
	resp = b.call(t, http.MethodPost, base+"/"+ids[1]+"/interrupt", `{}`)
	require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
	require.Equal(t, true, resp.json(t)["interrupted"])
	require.Equal(t, "sent", resp.json(t)["enqueued_message"].(map[string]any)["status"])

	// Session 7 is idle: the message is its turn now.
	b.queue.Answer("SendEnqueuedMessageNow", &queuev1.SendEnqueuedMessageNowResponse{
		EnqueuedMessage: queuefake.Sent(queuefake.Message(1, 7, 0, "first")), Delivered: true, Message: "delivered as the next turn",
	}, nil)
	resp = b.call(t, http.MethodPost, base+"/"+ids[0]+"/send_now", `{}`)
	require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
	require.Equal(t, true, resp.json(t)["delivered"])

	resp = b.call(t, http.MethodPost, base+"/one/interrupt", `{}`)
	require.Equal(t, http.StatusBadRequest, resp.status, "a message id is a number: %s", resp.body)
	b.queue.Answer("SendEnqueuedMessageNow", nil, status.Error(codes.NotFound, "no such enqueued message"))
	resp = b.call(t, http.MethodPost, base+"/999/send_now", `{}`)
	require.Equal(t, http.StatusNotFound, resp.status, "%s", resp.body)
	for path, wantKind := range map[string]string{base + "/1/send_now": "Cannot send now", base + "/1/interrupt": "Cannot interrupt"} {
		b.queue.FailWith(status.Error(codes.FailedPrecondition, "session #7 is archived"))
		resp = b.call(t, http.MethodPost, path, `{}`)
		require.Equal(t, http.StatusUnprocessableEntity, resp.status, "%s", resp.body)
		_, kind, _ := resp.problem(t)
		require.Equal(t, wantKind, kind)
	}
}

// The session's detail carries its queue as the queue keeps it: the
// messages still to be delivered, in order, then the undelivered ones
// (never the sent ones); a queue that cannot be asked leaves it empty,
// says so in a header, and the session is read all the same.
func TestSessionDetailCarriesTheQueue(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, provenanceOpts{})
	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{Id: 1, Slug: "worker", Status: "running"}}, nil)
	// The queue lists what is still to be delivered, then what left it: an
	// archive retired two, one was sent.
	b.queue.Answer("ListEnqueuedMessages", &queuev1.ListEnqueuedMessagesResponse{EnqueuedMessages: []*queuev1.EnqueuedMessage{
		queuefake.Message(4, 1, 1, "waiting"), queuefake.Undelivered(queuefake.Message(1, 1, 0, "lost one")),
		queuefake.Undelivered(queuefake.Message(2, 1, 0, "lost two")), queuefake.Sent(queuefake.Message(3, 1, 0, "sent")),
	}}, nil)

	for _, ref := range []string{"1", "worker"} {
		resp := b.call(t, http.MethodGet, "/api/v1/sessions/"+ref, "")
		require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
		require.Empty(t, resp.header.Values(rest.DegradedHeader))
		var got []string
		for _, m := range resp.json(t)["enqueued_messages"].([]any) {
			m := m.(map[string]any)
			got = append(got, m["content"].(string)+" "+m["status"].(string))
			if m["status"] == "undelivered" {
				require.Equal(t, queuefake.Now.Format(time.RFC3339), m["undelivered_at"], "marked as never delivered, with when")
			}
		}
		require.Equal(t, []string{"waiting pending", "lost one undelivered", "lost two undelivered"}, got)
	}
	list := b.queue.Calls("ListEnqueuedMessages")
	require.Equal(t, "1", list[len(list)-1].Request.(*queuev1.ListEnqueuedMessagesRequest).GetSessionId(),
		"the queue is asked by the id lifecycle resolved")

	b.queue.FailWith(status.Error(codes.Unavailable, "down"))
	resp := b.call(t, http.MethodGet, "/api/v1/sessions/1", "")
	require.Equal(t, http.StatusOK, resp.status, "the session read does not fail: %s", resp.body)
	require.Equal(t, []any{}, resp.json(t)["enqueued_messages"])
	require.Contains(t, strings.Join(resp.header.Values(rest.DegradedHeader), " | "), "queue: enqueued_messages is unknown")
	require.NotNil(t, resp.json(t)["session_hierarchy"], "lineage still answered")
}
