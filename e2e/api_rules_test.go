package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQueueAndSessionsAPIAsTheOriginal walks issue 23's rules 15, 18 and
// 20 on the real binaries over REST: one queued message by id (404 for
// another session's), a paged and filtered queue, the enqueue's line on
// the session's timeline (queue → lifecycle), GET /sessions without the
// trash unless asked, status_summary beside session, and an unarchive
// that restores in full and says what becomes of the clone.
func TestQueueAndSessionsAPIAsTheOriginal(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	create := func() int64 {
		t.Helper()
		code, body := api.do(t, "POST", "/api/v1/sessions", `{"prompt":"p","git_root":"git@example.com:acme/app.git"}`)
		require.Equal(t, http.StatusCreated, code, body)
		var created struct{ Session struct{ ID int64 } }
		require.NoError(t, json.Unmarshal([]byte(body), &created))
		return created.Session.ID
	}
	id, other := create(), create()
	for _, sid := range []int64{id, other} {
		// Running, so no drain delivers a message while the test reads.
		code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/transition", sid), `{"event":"start","running_job_id":"e2e"}`)
		require.Equal(t, http.StatusOK, code, body)
	}
	enqueue := func(sid int64, content string) int64 {
		t.Helper()
		code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", sid), fmt.Sprintf(`{"content":%q}`, content))
		require.Equal(t, http.StatusOK, code, body)
		var resp struct {
			EnqueuedMessage struct{ ID int64 } `json:"enqueued_message"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &resp))
		return resp.EnqueuedMessage.ID
	}
	first, second := enqueue(id, "first"), enqueue(id, "second")
	foreign := enqueue(other, "not yours")

	t.Run("rule 15: the queue's API", func(t *testing.T) {
		code, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages/%d", id, second), "")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"content":"second"`)
		code, body = api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages/%d", id, foreign), "")
		require.Equal(t, http.StatusNotFound, code, "another session's message: %s", body)

		code, body = api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages?per_page=1&page=2", id), "")
		require.Equal(t, http.StatusOK, code, body)
		var page struct {
			EnqueuedMessages []struct{ ID int64 } `json:"enqueued_messages"`
			Pagination       struct {
				Page, PerPage, TotalPages int
				TotalCount                int64 `json:"total_count"`
			} `json:"pagination"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &page))
		require.Len(t, page.EnqueuedMessages, 1)
		require.Equal(t, second, page.EnqueuedMessages[0].ID)
		require.EqualValues(t, 2, page.Pagination.TotalCount, body)
		code, body = api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages?status=queued", id), "")
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		code, body = api.do(t, "PATCH", fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages/%d", id, first), `{"position":0}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)

		want := fmt.Sprintf("[Queue] message #%d queued at position 1", first)
		require.Eventually(t, func() bool {
			_, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/timeline", id), "")
			return strings.Contains(body, want)
		}, 10*time.Second, 100*time.Millisecond, "the enqueue's line reaches the session's timeline")
	})

	t.Run("rule 20: the trash and status_summary", func(t *testing.T) {
		trashed := create()
		code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/archive", trashed), `{}`)
		require.Equal(t, http.StatusOK, code, body)
		listed := func(query string) bool {
			t.Helper()
			code, body := api.do(t, "GET", "/api/v1/sessions"+query, "")
			require.Equal(t, http.StatusOK, code, body)
			return strings.Contains(body, fmt.Sprintf(`"id":%d,`, trashed))
		}
		require.False(t, listed("?per_page=100"), "no filter leaves the trash out")
		require.True(t, listed("?per_page=100&show_archived=true"))
		require.True(t, listed("?per_page=100&status=archived"))

		code, body = api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d", id), "")
		require.Equal(t, http.StatusOK, code, body)
		var detail map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(body), &detail))
		require.Contains(t, detail, "status_summary")
		require.Equal(t, "null", string(detail["status_summary"]))
	})

	t.Run("rule 18: unarchive restores in full", func(t *testing.T) {
		failed := create()
		code, body := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/transition", failed), `{"event":"start","running_job_id":"e2e"}`)
		require.Equal(t, http.StatusOK, code, body)
		code, body = api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/transition", failed), `{"event":"fail","failure_reason":"it broke"}`)
		require.Equal(t, http.StatusOK, code, body)
		code, body = api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/archive", failed), `{}`)
		require.Equal(t, http.StatusOK, code, body)
		code, body = api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/unarchive", failed), `{}`)
		require.Equal(t, http.StatusOK, code, body)
		var resp struct {
			Session struct {
				Status        string
				FailureReason string `json:"failure_reason"`
			}
			CloneRestored  *bool `json:"clone_restored"`
			CloneRecreated *bool `json:"clone_recreated"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &resp))
		require.Equal(t, "needs_input", resp.Session.Status)
		require.Empty(t, resp.Session.FailureReason)
		require.NotNil(t, resp.CloneRestored, "the answer says whether the clone comes back: %s", body)
		require.NotNil(t, resp.CloneRecreated, body)
		_, body = api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/timeline", failed), "")
		require.Equal(t, 1, strings.Count(body, "Session unarchived with full state restoration"), body)
	})
}
