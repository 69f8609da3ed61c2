package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// errorBody is the API's error shape.
type errorBody struct {
	Error    string   `json:"error"`
	Message  string   `json:"message"`
	Messages []string `json:"messages"`
	// Code is a coded refusal's code (issue 23: ScheduleWakeUp's).
	Code string `json:"code,omitempty"`
}

func readError(t *testing.T, body string) errorBody {
	t.Helper()
	var e errorBody
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&e), body)
	require.NotEmpty(t, e.Error, body)
	require.NotEmpty(t, e.Message, body)
	require.NotEmpty(t, e.Messages, body)
	return e
}

// TestSurfaceBehavesAsTheOriginal drives, on the real binaries, the
// gateway's side of issue 9: errors in the original's shape and statuses,
// per_page clamped, bulk_archive taking ids as numbers, and
// quick_search_sessions finding a session by its notes, slug or prompt with
// compact previews.
func TestSurfaceBehavesAsTheOriginal(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}

	t.Run("ErrorShape", func(t *testing.T) {
		code, body := api.do(t, "POST", "/api/v1/sessions", `{"title":"x","slug":"Not A Slug"}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		e := readError(t, body)
		require.Equal(t, "Validation failed", e.Error)
		require.Len(t, e.Messages, 2, "one entry per problem: %v", e.Messages)
		require.True(t, strings.HasPrefix(e.Messages[0], "git_root: ") || strings.HasPrefix(e.Messages[1], "git_root: "), "%v", e.Messages)

		code, body = api.do(t, "POST", "/api/v1/sessions", `{"git_root": `)
		require.Equal(t, http.StatusBadRequest, code, body)
		require.Equal(t, "Malformed JSON", readError(t, body).Error)

		id := createREST(t, api, `{"prompt":"p","git_root":"g"}`)
		code, body = api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/unarchive", id), `{}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		require.Equal(t, "Cannot restore", readError(t, body).Error)

		code, body = api.do(t, "GET", "/api/v1/sessions/424242", "")
		require.Equal(t, http.StatusNotFound, code, body)
		require.Equal(t, "Not found", readError(t, body).Error)

		code, body = api.do(t, "GET", "/api/v1/sessions?q=%ED%A0%80", "")
		require.Equal(t, http.StatusBadRequest, code, body)
		require.Contains(t, readError(t, body).Message, `query parameter "q" is not valid UTF-8`)
	})

	t.Run("PerPageIsClamped", func(t *testing.T) {
		createREST(t, api, `{"prompt":"p","git_root":"g"}`)
		for asked, want := range map[string]int{"500": rules.MaxPerPage, "-3": 1, "0": rules.DefaultPerPage, "100": 100} {
			code, body := api.do(t, "GET", "/api/v1/sessions?per_page="+asked, "")
			require.Equal(t, http.StatusOK, code, body)
			var page struct {
				Pagination struct {
					PerPage int `json:"per_page"`
				}
			}
			require.NoError(t, json.Unmarshal([]byte(body), &page))
			require.Equal(t, want, page.Pagination.PerPage, "per_page=%s", asked)
		}
	})

	t.Run("BulkArchiveTakesNumbers", func(t *testing.T) {
		a := createREST(t, api, `{"prompt":"p","git_root":"g"}`)
		b := createREST(t, api, `{"prompt":"p","git_root":"g"}`)
		createREST(t, api, `{"prompt":"p","git_root":"g","slug":"bulk-by-slug"}`)
		code, body := api.do(t, "POST", "/api/v1/sessions/bulk_archive", fmt.Sprintf(`{"session_ids":[%d, %d, "bulk-by-slug"]}`, a, b))
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"archived_count":3`)
		require.Equal(t, "archived", getSession(t, api, a)["status"])

		c := mcpConnect(t, s, "?tool_groups=sessions")
		d := createREST(t, api, `{"prompt":"p","git_root":"g"}`)
		res := callTool(t, c, "action_session", map[string]any{"action": "bulk_archive", "session_ids": []any{d}})
		require.False(t, res.IsError, text(res))
		require.Contains(t, text(res), "## Bulk archive\n\n- **archived_count:** 1\n")
		require.Equal(t, "archived", getSession(t, api, d)["status"])
	})

	t.Run("QuickSearchSessions", func(t *testing.T) {
		long := strings.Repeat("untangle the payment retries; ", 50) + "END-OF-PROMPT"
		router := createREST(t, api, fmt.Sprintf(`{"prompt":%q,"git_root":"g","title":"Payments","slug":"payments-router"}`, long))
		code, body := api.do(t, "PATCH", fmt.Sprintf("/api/v1/sessions/%d", router), `{"notes":"blocked on the ledger migration"}`)
		require.Equal(t, http.StatusOK, code, body)
		createREST(t, api, `{"prompt":"write the docs","git_root":"g","title":"Docs"}`)

		c := mcpConnect(t, s, "?tool_groups=sessions")
		for _, q := range []string{"LEDGER MIGRATION", "payments-rout", "payment retries"} {
			res := callTool(t, c, "quick_search_sessions", map[string]any{"q": q, "status": "waiting"})
			require.False(t, res.IsError, text(res))
			require.Contains(t, text(res), fmt.Sprintf("- #%d [waiting] Payments (slug payments-router)", router), q)
			require.Contains(t, text(res), "1 session matches", q)
			require.NotContains(t, text(res), "END-OF-PROMPT", "never the whole prompt")
		}
		res := callTool(t, c, "quick_search_sessions", map[string]any{"q": "ledger", "status": []any{"archived"}})
		require.False(t, res.IsError, text(res))
		require.Contains(t, text(res), "No sessions match with status archived")

		res = callTool(t, c, "quick_search_sessions", map[string]any{"per_page": 1})
		require.False(t, res.IsError, text(res))
		require.Contains(t, text(res), "(1 per page)")
		require.Contains(t, text(res), "More: page 2 of ")
	})
}
