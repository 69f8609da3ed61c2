package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// category is a category as REST answers it.
type category struct {
	ID       json.Number `json:"id"`
	Name     string      `json:"name"`
	Position int         `json:"position"`
	Frozen   bool        `json:"frozen"`
}

func (c restClient) createCategory(t *testing.T, body string) category {
	t.Helper()
	code, resp := c.do(t, http.MethodPost, "/api/v1/categories", body)
	require.Equal(t, http.StatusCreated, code, resp)
	var got struct{ Category category }
	require.NoError(t, json.Unmarshal([]byte(resp), &got), resp)
	return got.Category
}

func (c restClient) categories(t *testing.T) []category {
	t.Helper()
	code, resp := c.do(t, http.MethodGet, "/api/v1/categories", "")
	require.Equal(t, http.StatusOK, code, resp)
	var got struct{ Categories []category }
	require.NoError(t, json.Unmarshal([]byte(resp), &got), resp)
	return got.Categories
}

func names(cs []category) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// TestCategoriesAndStarsOverRESTAndMCP: categories are data — created,
// renamed, frozen, reordered and deleted over REST and MCP, a bad request
// refused with 422 naming the field and writing nothing — and a session is
// starred, moved and found by both.
func TestCategoriesAndStarsOverRESTAndMCP(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}

	docs := api.createCategory(t, `{"name":"Docs"}`)
	bugs := api.createCategory(t, `{"name":"Bugs","frozen":true}`)
	first := api.createCategory(t, `{"name":"Triage","position":1}`)
	require.Equal(t, []string{"Triage", "Docs", "Bugs"}, names(api.categories(t)))
	require.True(t, api.categories(t)[2].Frozen)

	// Refused with the field and what to do; nothing is written.
	for body, want := range map[string]string{
		`{"name":"docs"}`:                            "a category named",
		`{"name":"   "}`:                             "is required and not blank",
		`{"name":"x","position":0}`:                  "positions start at 1",
		`{"name":"two\nlines"}`:                      "one line",
		`{"name":"` + strings.Repeat("n", 81) + `"}`: "80",
	} {
		code, resp := api.do(t, http.MethodPost, "/api/v1/categories", body)
		require.Equal(t, http.StatusUnprocessableEntity, code, "%s: %s", body, resp)
		require.Contains(t, resp, want, body)
	}
	require.Equal(t, []string{"Triage", "Docs", "Bugs"}, names(api.categories(t)), "a refused create writes nothing")
	code, resp := api.do(t, http.MethodPatch, "/api/v1/categories/"+docs.ID.String(), `{"name":"Bugs","position":3}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, resp)
	require.Equal(t, []string{"Triage", "Docs", "Bugs"}, names(api.categories(t)), "a refused update neither renames nor moves")
	code, resp = api.do(t, http.MethodPatch, "/api/v1/categories/"+docs.ID.String(), `{}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, resp)
	require.Contains(t, resp, "changes nothing")
	code, resp = api.do(t, http.MethodDelete, "/api/v1/categories/424242", "")
	require.Equal(t, http.StatusNotFound, code, resp)

	// Reorder: Docs last, the others close up.
	code, resp = api.do(t, http.MethodPatch, "/api/v1/categories/"+docs.ID.String(), `{"position":9}`)
	require.Equal(t, http.StatusOK, code, resp)
	got := api.categories(t)
	require.Equal(t, []string{"Triage", "Bugs", "Docs"}, names(got))
	require.Equal(t, []int{1, 2, 3}, []int{got[0].Position, got[1].Position, got[2].Position})

	// A session: moved, starred, found by the filters.
	repo := gitRepo(t)
	id := api.createRunning(t, repo, "@demo say hi")
	other := api.createRunning(t, repo, "@demo say there")
	code, resp = api.do(t, http.MethodPatch, fmt.Sprintf("/api/v1/sessions/%d", id), `{"category_id":424242}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, resp)
	require.Contains(t, resp, "no category 424242 exists")
	code, resp = api.do(t, http.MethodPatch, fmt.Sprintf("/api/v1/sessions/%d", id), `{"category_id":`+bugs.ID.String()+`}`)
	require.Equal(t, http.StatusOK, code, resp)
	code, resp = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/star", id), `{}`)
	require.Equal(t, http.StatusOK, code, resp)
	sess := getSession(t, api, id)
	require.Equal(t, true, sess["starred"], sess)
	require.Equal(t, bugs.ID.String(), fmt.Sprint(sess["category_id"]), sess)

	list := func(query string) []string {
		code, resp := api.do(t, http.MethodGet, "/api/v1/sessions?"+query, "")
		require.Equal(t, http.StatusOK, code, resp)
		var got struct{ Sessions []map[string]any }
		require.NoError(t, json.Unmarshal([]byte(resp), &got))
		var ids []string
		for _, s := range got.Sessions {
			ids = append(ids, fmt.Sprint(s["id"]))
			if fmt.Sprint(s["id"]) == fmt.Sprint(id) {
				require.Equal(t, true, s["starred"], "list items show the star")
			}
		}
		return ids
	}
	require.Equal(t, []string{fmt.Sprint(id)}, list("starred=true"))
	require.Equal(t, []string{fmt.Sprint(id)}, list("category_id="+bugs.ID.String()))
	require.Equal(t, []string{fmt.Sprint(other)}, list("category_id=0"))
	require.Equal(t, []string{fmt.Sprint(other)}, list("skip_frozen_categories=true"))

	// Over MCP: the same data, the same refusals.
	c := mcpConnect(t, s, "")
	res := callTool(t, c, "manage_categories", map[string]any{"action": "list"})
	require.False(t, res.IsError, text(res))
	require.Contains(t, text(res), "1. Triage")
	res = callTool(t, c, "manage_categories", map[string]any{"action": "create", "name": "TRIAGE"})
	require.True(t, res.IsError)
	require.Contains(t, text(res), "a category named")
	res = callTool(t, c, "manage_categories", map[string]any{"action": "update", "category_id": first.ID, "frozen": true, "name": "Inbox"})
	require.False(t, res.IsError, text(res))
	require.Contains(t, text(res), "Inbox (#"+first.ID.String()+"), frozen")
	res = callTool(t, c, "manage_categories", map[string]any{"action": "delete"})
	require.True(t, res.IsError)
	require.Contains(t, text(res), "delete needs category_id")

	res = callTool(t, c, "action_session", map[string]any{"action": "unstar", "session_id": fmt.Sprint(id)})
	require.NotEqual(t, true, toolSession(t, res)["starred"])
	res = callTool(t, c, "action_session", map[string]any{"action": "move_to_category", "session_id": fmt.Sprint(other), "category_id": docs.ID})
	require.Equal(t, docs.ID.String(), fmt.Sprint(toolSession(t, res)["category_id"]))
	res = callTool(t, c, "quick_search_sessions", map[string]any{"category_id": docs.ID})
	require.False(t, res.IsError, text(res))
	require.Contains(t, text(res), fmt.Sprintf("#%d", other))
	require.NotContains(t, text(res), fmt.Sprintf("#%d ", id))

	// Deleting a category leaves its sessions uncategorized.
	code, resp = api.do(t, http.MethodDelete, "/api/v1/categories/"+docs.ID.String(), "")
	require.Equal(t, http.StatusNoContent, code, resp)
	require.Nil(t, getSession(t, api, other)["category_id"])
	require.Equal(t, []string{"Inbox", "Bugs"}, names(api.categories(t)))
}

// TestInferenceTitlesAndFilesASessionOnItsFirstPause, on the demo runtime:
// a session's first pause gives it a title and a category (not a frozen
// one) through session/<id>/infer; a title the caller set is kept. Then
// the console's "Refresh all" skips a session in a frozen category, and
// "Refresh starred" refreshes it, starred.
func TestInferenceTitlesAndFilesASessionOnItsFirstPause(t *testing.T) {
	t.Parallel()
	s := newConsoleStackWith(t, stackOptions{turns: true})
	gateway := "http://" + s.addr["gateway"]
	api := restClient{base: gateway, key: s.apiKey}
	parked := api.createCategory(t, `{"name":"Parked","frozen":true}`)
	docs := api.createCategory(t, `{"name":"Docs"}`)
	bugs := api.createCategory(t, `{"name":"Bugs"}`)

	repo := gitRepo(t)
	untitled := api.createRunning(t, repo, "@demo say fix the bugs in the parser")
	body, err := json.Marshal(map[string]any{"prompt": "@demo say hello", "git_root": repo, "title": "Kept by the caller"})
	require.NoError(t, err)
	code, resp := api.do(t, http.MethodPost, "/api/v1/sessions", string(body))
	require.Equal(t, http.StatusCreated, code, resp)
	var created struct{ Session runnerSession }
	require.NoError(t, json.Unmarshal([]byte(resp), &created))
	titled := created.Session.ID

	api.waitStatus(t, untitled, "needs_input")
	api.waitStatus(t, titled, "needs_input")
	var sess map[string]any
	require.Eventually(t, func() bool {
		sess = getSession(t, api, untitled)
		return sess["title"] != "" && sess["category_id"] != nil
	}, 30*time.Second, 100*time.Millisecond, "the first pause inferred nothing: %v", sess)
	require.Equal(t, "@demo say fix the bugs in the parser", sess["title"])
	require.Equal(t, bugs.ID.String(), fmt.Sprint(sess["category_id"]), "the category the prompt names")
	require.Contains(t, strings.Join(timeline(t, api, untitled, "note"), "\n"), `[Inference] set the title "@demo say fix the bugs in the parser" and the category "Bugs" (by `)

	require.Eventually(t, func() bool {
		sess = getSession(t, api, titled)
		return sess["category_id"] != nil
	}, 30*time.Second, 100*time.Millisecond, "no category inferred: %v", sess)
	require.Equal(t, "Kept by the caller", sess["title"], "a title the caller set is never overwritten")
	require.Equal(t, docs.ID.String(), fmt.Sprint(sess["category_id"]), "the first category not frozen")

	// The operator finds the inference in the Web UI by its id and type.
	tc, err := client.Dial(client.Options{HostPort: s.temporal, Namespace: s.namespace})
	require.NoError(t, err)
	defer tc.Close()
	desc, err := tc.DescribeWorkflow(context.Background(), fmt.Sprintf("session/%d/infer", untitled), "")
	require.NoError(t, err)
	require.Equal(t, "zimmer.runner.Infer", desc.RawResponse.GetWorkflowExecutionInfo().GetType().GetName())

	// "Refresh all" leaves out a session in a frozen category; "Refresh
	// starred" takes it, starred.
	code, resp = api.do(t, http.MethodPatch, fmt.Sprintf("/api/v1/sessions/%d", untitled), `{"category_id":`+parked.ID.String()+`}`)
	require.Equal(t, http.StatusOK, code, resp)
	code, resp = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/star", untitled), `{}`)
	require.Equal(t, http.StatusOK, code, resp)
	resumes := func(id int64) int { return strings.Count(strings.Join(api.transitions(t, id), " "), "resume") }

	browser := newConsoleBrowser(t, gateway)
	browser.signIn(t)
	code, page := browser.get(t, "/console/")
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, "★ starred")
	require.Contains(t, page, "in Parked")
	require.Contains(t, page, fmt.Sprintf(`action="/console/sessions/%d/star"`, titled))
	require.Contains(t, page, `action="/console/refresh-starred"`)

	code, resp = browser.submit(t, "/console/", "/console/refresh-all", url.Values{})
	require.Equal(t, http.StatusSeeOther, code, resp)
	_, page = browser.get(t, "/console/")
	require.Contains(t, page, "Left out 1 in frozen categories.")
	require.Equal(t, 1, resumes(titled), "refresh all nudged the session outside a frozen category")
	require.Zero(t, resumes(untitled), "refresh all skips a frozen category")

	api.waitStatus(t, titled, "needs_input")
	code, resp = browser.submit(t, "/console/", "/console/refresh-starred", url.Values{})
	require.Equal(t, http.StatusSeeOther, code, resp)
	_, page = browser.get(t, "/console/")
	require.Contains(t, page, "Refreshed all 1 starred sessions not archived")
	require.Equal(t, 1, resumes(untitled), "refresh starred outranks the frozen category")
	require.Equal(t, 1, resumes(titled), "refresh starred leaves the unstarred alone")

	// The card's own controls: unstar, and move back to Docs.
	api.waitStatus(t, untitled, "needs_input")
	code, resp = browser.submit(t, "/console/", fmt.Sprintf("/console/sessions/%d/star", untitled), url.Values{"starred": {"0"}})
	require.Equal(t, http.StatusSeeOther, code, resp)
	code, resp = browser.submit(t, "/console/", fmt.Sprintf("/console/sessions/%d/category", untitled), url.Values{"category_id": {docs.ID.String()}})
	require.Equal(t, http.StatusSeeOther, code, resp)
	sess = getSession(t, api, untitled)
	require.NotEqual(t, true, sess["starred"])
	require.Equal(t, docs.ID.String(), fmt.Sprint(sess["category_id"]))
}
