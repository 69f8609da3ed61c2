package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEnqueuedMessages queues, lists, reorders and deletes a session's
// messages over REST and MCP on the real binaries: the gateway's routes
// reach the queue, which resolves the session (id or slug) and its state
// through lifecycle and keeps the messages in its own database.
func TestEnqueuedMessages(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	code, body := api.do(t, "POST", "/api/v1/sessions", `{"prompt":"p","git_root":"git@example.com:acme/app.git","slug":"queued"}`)
	require.Equal(t, http.StatusCreated, code, body)
	var created struct{ Session struct{ ID int64 } }
	require.NoError(t, json.Unmarshal([]byte(body), &created))
	id := created.Session.ID
	base := fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", id)
	// Running (no runner runs it here), so no drain delivers a message
	// while the test reads the queue: a session at rest would get the
	// first one as its turn soon after it was queued.
	code, body = api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/transition", id), `{"event":"start","running_job_id":"e2e"}`)
	require.Equal(t, http.StatusOK, code, body)

	type message struct {
		ID       int64
		Position int
		Status   string
		Origin   string
		Content  string
	}
	queue := func(path string) []string {
		t.Helper()
		code, body := api.do(t, "GET", path, "")
		require.Equal(t, http.StatusOK, code, body)
		var list struct {
			EnqueuedMessages []message `json:"enqueued_messages"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &list))
		var got []string
		for i, m := range list.EnqueuedMessages {
			require.Equal(t, i+1, m.Position, body)
			require.Equal(t, "pending", m.Status)
			require.Equal(t, "caller", m.Origin, "every read shows the origin")
			got = append(got, m.Content)
		}
		return got
	}

	t.Run("REST", func(t *testing.T) {
		var ids []int64
		for i, path := range []string{base, "/api/v1/sessions/queued/enqueued_messages", base} {
			code, body := api.do(t, "POST", path, fmt.Sprintf(`{"content":"message %d","idempotency_key":"k%d"}`, i+1, i+1))
			require.Equal(t, http.StatusOK, code, body)
			var resp struct {
				EnqueuedMessage message `json:"enqueued_message"`
				Created         bool
			}
			require.NoError(t, json.Unmarshal([]byte(body), &resp))
			require.True(t, resp.Created)
			ids = append(ids, resp.EnqueuedMessage.ID)
		}
		code, body := api.do(t, "POST", base, `{"content":"message 1 again","idempotency_key":"k1"}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"created":false`, "a retried create queues nothing new")
		code, body = api.do(t, "POST", base, `{"content":"x","origin":"automated_pr_merged"}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, "origin is settable by no request: %s", body)
		require.Contains(t, readError(t, body).Message, "origin: is not a field of this request")

		code, body = api.do(t, "PATCH", fmt.Sprintf("%s/%d", base, ids[2]), `{"position":1}`)
		require.Equal(t, http.StatusOK, code, body)
		code, body = api.do(t, "DELETE", fmt.Sprintf("/api/v1/sessions/queued/enqueued_messages/%d", ids[1]), "")
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, []string{"message 3", "message 1"}, queue("/api/v1/sessions/queued/enqueued_messages"))

		code, body = api.do(t, "DELETE", fmt.Sprintf("%s/%d", base, ids[1]), "")
		require.Equal(t, http.StatusNotFound, code, body)
		code, body = api.do(t, "POST", "/api/v1/sessions/no-such-session/enqueued_messages", `{"content":"x"}`)
		require.Equal(t, http.StatusNotFound, code, body)
	})

	t.Run("MCP", func(t *testing.T) {
		c := mcpConnect(t, s, "?tool_groups=sessions")
		call := func(args map[string]any) string {
			t.Helper()
			res := callTool(t, c, "manage_enqueued_messages", args)
			require.False(t, res.IsError, text(res))
			return text(res)
		}
		call(map[string]any{"action": "create", "session_id": "queued", "content": "from MCP"})
		list := call(map[string]any{"action": "list", "session_id": id})
		require.Contains(t, list, "origin caller: from MCP")
		got := queue(base)
		require.Equal(t, []string{"message 3", "message 1", "from MCP"}, got)

		var resp struct {
			EnqueuedMessages []message `json:"enqueued_messages"`
		}
		code, body := api.do(t, "GET", base, "")
		require.Equal(t, http.StatusOK, code, body)
		require.NoError(t, json.Unmarshal([]byte(body), &resp))
		fromMCP, first := resp.EnqueuedMessages[2].ID, resp.EnqueuedMessages[0].ID
		call(map[string]any{"action": "update", "session_id": id, "message_id": fromMCP, "position": 1, "content": "from MCP, first"})
		call(map[string]any{"action": "delete", "session_id": "queued", "message_id": first})
		require.Equal(t, []string{"from MCP, first", "message 1"}, queue(base))
	})

	t.Run("an archived session takes no messages", func(t *testing.T) {
		code, body := api.do(t, "POST", "/api/v1/sessions/queued/archive", `{"force":true}`)
		require.Equal(t, http.StatusOK, code, body)
		code, body = api.do(t, "POST", base, `{"content":"too late"}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		require.Contains(t, body, "is archived, so nothing would deliver the message; unarchive it first")
	})
}
