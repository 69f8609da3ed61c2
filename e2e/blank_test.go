package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBlankTextAndCalleeRefusals drives issue 20's items 3 and 4 through
// the gateway on the real binaries. Item 3: text that is blank after
// trimming is refused with 422 naming the field on every route that takes
// a prompt or a message (REST and MCP), and nothing is queued: the queue
// never holds a message nothing can deliver. Item 4: a refusal by a
// service the queue calls (lineage's InvalidArgument for acting_session_id
// -1) is the caller's 422, never a 500.
func TestBlankTextAndCalleeRefusals(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	session := func(slug string) int64 {
		t.Helper()
		code, body := api.do(t, "POST", "/api/v1/sessions", fmt.Sprintf(`{"prompt":"p","git_root":"git@example.com:acme/app.git","slug":%q}`, slug))
		require.Equal(t, http.StatusCreated, code, body)
		var created struct{ Session struct{ ID int64 } }
		require.NoError(t, json.Unmarshal([]byte(body), &created))
		return created.Session.ID
	}
	idle := session("blank-idle")
	running := session("blank-running")
	// Running (no runner runs it here): queued messages stay pending.
	code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/transition", running), `{"event":"start","running_job_id":"e2e"}`)
	require.Equal(t, http.StatusOK, code, body)

	queue := func(id int64) []string {
		t.Helper()
		code, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", id), "")
		require.Equal(t, http.StatusOK, code, body)
		var list struct {
			EnqueuedMessages []struct{ Content, Status string } `json:"enqueued_messages"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &list))
		var out []string
		for _, m := range list.EnqueuedMessages {
			out = append(out, m.Status+": "+m.Content)
		}
		return out
	}

	t.Run("REST refuses blank text with 422 naming the field", func(t *testing.T) {
		for _, blank := range []string{` `, ` \n\t`, `\n\r\t`, `\u00a0\u3000`} {
			for _, tc := range []struct{ method, path, body, field string }{
				{"POST", fmt.Sprintf("/api/v1/sessions/%d/follow_up", idle), `{"prompt":"%s"}`, "prompt"},
				{"POST", fmt.Sprintf("/api/v1/sessions/%d/follow_up", running), `{"prompt":"%s","force_immediate":true}`, "prompt"},
				{"POST", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", idle), `{"content":"%s"}`, "content"},
				{"POST", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", running), `{"content":"%s"}`, "content"},
				{"POST", "/api/v1/sessions", `{"git_root":"git@example.com:acme/app.git","prompt":"%s"}`, "prompt"},
			} {
				code, body := api.do(t, tc.method, tc.path, fmt.Sprintf(tc.body, blank))
				require.Equal(t, http.StatusUnprocessableEntity, code, "%s %s %q: %s", tc.method, tc.path, blank, body)
				require.Contains(t, body, tc.field+": is blank (only white space)", body)
			}
		}
		code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", running), `{"content":"kept"}`)
		require.Equal(t, http.StatusOK, code, body)
		var created struct {
			EnqueuedMessage struct{ ID int64 } `json:"enqueued_message"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &created))
		code, body = api.do(t, "PATCH", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages/%d", running, created.EnqueuedMessage.ID), `{"content":" \t "}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		require.Contains(t, body, "content: is blank (only white space)", body)

		require.Empty(t, queue(idle), "nothing was queued on the idle session")
		require.Equal(t, []string{"pending: kept"}, queue(running), "only the real message, unedited")
	})

	t.Run("MCP refuses blank text in the tool's result, not as an internal error", func(t *testing.T) {
		c := mcpConnect(t, s, "?tool_groups=sessions")
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"action_session", map[string]any{"action": "follow_up", "session_id": idle, "prompt": "\n\r\t"}},
			{"manage_enqueued_messages", map[string]any{"action": "create", "session_id": running, "content": " \n\t"}},
		} {
			res := callTool(t, c, call.tool, call.args)
			require.True(t, res.IsError, "%s %v: %s", call.tool, call.args, text(res))
			require.Contains(t, text(res), "is blank (only white space)")
			require.NotContains(t, text(res), "internal")
		}
		require.Empty(t, queue(idle))
		require.Equal(t, []string{"pending: kept"}, queue(running))
	})

	t.Run("a callee's refusal is the caller's 422, never a 500", func(t *testing.T) {
		code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", running), `{"content":"to interrupt with"}`)
		require.Equal(t, http.StatusOK, code, body)
		var created struct {
			EnqueuedMessage struct{ ID int64 } `json:"enqueued_message"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &created))
		for _, action := range []string{"interrupt", "send_now"} {
			code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages/%d/%s", running, created.EnqueuedMessage.ID, action),
				`{"acting_session_id":-1}`)
			require.Equal(t, http.StatusUnprocessableEntity, code, "%s: %s", action, body)
			require.Contains(t, body, "acting_session_id", body)
		}
		require.Equal(t, []string{"pending: kept", "pending: to interrupt with"}, queue(running), "nothing was sent")
	})

	// Last: it may archive, fail or delete the sessions it is given.
	t.Run("whitespace-only strings in every field of every route and tool: never a 5xx", func(t *testing.T) {
		target := session("blank-sweep")
		code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", target), `{"content":"sweep"}`)
		require.Equal(t, http.StatusOK, code, body)
		var created struct {
			EnqueuedMessage struct{ ID int64 } `json:"enqueued_message"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &created))
		sweepWhitespace(t, s, api, []int64{target, idle, running}, created.EnqueuedMessage.ID)
	})
}
