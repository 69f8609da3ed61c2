package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pendingElicitation is one entry of GET /sessions/{id}/elicitations.
type pendingElicitation struct {
	ID              string         `json:"id"`
	TurnID          string         `json:"turn_id"`
	Message         string         `json:"message"`
	RequestedSchema map[string]any `json:"requested_schema"`
}

// waitElicitation waits for session id's agent to be blocked on a question
// and returns it.
func waitElicitation(t *testing.T, api restClient, id int64) pendingElicitation {
	t.Helper()
	var got struct{ Elicitations []pendingElicitation }
	require.Eventually(t, func() bool {
		code, body := api.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/elicitations", id), "")
		require.Equal(t, http.StatusOK, code, body)
		require.NoError(t, json.Unmarshal([]byte(body), &got), body)
		return len(got.Elicitations) == 1
	}, 60*time.Second, 100*time.Millisecond, "session %d's agent never blocked on its elicitation", id)
	return got.Elicitations[0]
}

// transcriptRaw is every raw line of session id's transcript.
func transcriptRaw(t *testing.T, api restClient, id int64) string {
	t.Helper()
	code, body := api.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/transcript", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var page struct{ Lines []struct{ Raw string } }
	require.NoError(t, json.Unmarshal([]byte(body), &page), body)
	raws := make([]string, 0, len(page.Lines))
	for _, l := range page.Lines {
		raws = append(raws, l.Raw)
	}
	return strings.Join(raws, "\n")
}

// TestElicitationsAreAnswered: the demo agent blocks on `@demo elicit`; an
// answer over REST (an operator key) or MCP reaches its process on the
// runner node, the agent's transcript shows the elicitation_result, and the
// session goes on to the end of its turn. A wrong answer is refused naming
// the field, a stale one as not pending, and a session credential may not
// answer at all. A question nobody answers in time leaves the
// lost_elicitation banner on REST and MCP get_session; a resume clears it.
func TestElicitationsAreAnswered(t *testing.T) {
	t.Parallel()
	s := newStackRunning(t, true)
	admin := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	operator := restClient{base: admin.base, key: s.operatorKey}
	repo := gitRepo(t)
	answer := func(api restClient, id int64, eid, body string) (int, string) {
		return api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/elicitations/%s/answer", id, eid), body)
	}

	t.Run("over REST", func(t *testing.T) {
		t.Parallel()
		id := admin.createRunning(t, repo, "@demo elicit 60s Ship the release?\n@demo say shipping as told")
		e := waitElicitation(t, operator, id)
		require.Equal(t, "Ship the release?", e.Message)
		require.Equal(t, "object", e.RequestedSchema["type"], "the agent's requested schema: %v", e.RequestedSchema)
		got := admin.session(t, id)
		require.Equal(t, "needs_input", got.Status)

		// Content that does not match the schema names the field.
		code, body := answer(operator, id, e.ID, `{"action":"accept","content":{"answer":5}}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		require.Contains(t, body, "content.answer")
		require.Contains(t, body, "must be a string")
		code, body = answer(operator, id, e.ID, `{"action":"accept","content":{}}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		require.Contains(t, body, "content.answer")
		// Another elicitation's id is not pending.
		code, body = answer(operator, id, "elicit_nobody", `{"action":"decline"}`)
		require.Equal(t, http.StatusNotFound, code, body)
		require.Contains(t, body, e.ID, "the refusal names the pending one")
		// The session's own credential may not answer its agent's question.
		cred := mintREST(t, admin, id)
		code, body = answer(restClient{base: admin.base, bearer: cred.Token}, id, e.ID, `{"action":"accept","content":{"answer":"me"}}`)
		require.Equal(t, http.StatusForbidden, code, body)

		code, body = answer(operator, id, e.ID, `{"action":"accept","content":{"answer":"yes, ship it"}}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"action":"accept"`)

		admin.waitStatus(t, id, "needs_input")
		require.Eventually(t, func() bool {
			return slices.Equal(admin.transitions(t, id), []string{"start", "block_on_elicitation", "unblock_from_elicitation", "pause"})
		}, 30*time.Second, 100*time.Millisecond, "the turn did not go on after the answer: %v", admin.transitions(t, id))
		raw := transcriptRaw(t, admin, id)
		require.Contains(t, raw, `"subtype":"elicitation_result"`)
		require.Contains(t, raw, `"action":"accept"`)
		require.Contains(t, raw, "yes, ship it", "the agent read the answer's content")
		require.Contains(t, raw, "shipping as told", "the agent went on after the answer")
		require.Contains(t, strings.Join(timeline(t, admin, id, "note"), "\n"), fmt.Sprintf("[Elicitation] %q answered: accept", e.ID))

		// Answered once: again is stale.
		code, body = answer(operator, id, e.ID, `{"action":"accept","content":{"answer":"again"}}`)
		require.Equal(t, http.StatusNotFound, code, body)
		require.Contains(t, body, "no pending elicitation")
		requireNoBanner(t, admin, id)
	})

	t.Run("over MCP, a cancel", func(t *testing.T) {
		t.Parallel()
		id := admin.createRunning(t, repo, "@demo elicit 60s Proceed with the migration?\n@demo say cancelled, moving on")
		e := waitElicitation(t, admin, id)
		c := mcpConnect(t, s, "?tool_groups=sessions")
		shown := text(callTool(t, c, "get_session", map[string]any{"session_id": fmt.Sprint(id)}))
		require.Contains(t, shown, "### Pending elicitation")
		require.Contains(t, shown, e.ID)
		require.Contains(t, shown, "Proceed with the migration?")

		res := callTool(t, c, "answer_elicitation", map[string]any{"session_id": fmt.Sprint(id), "elicitation_id": e.ID, "action": "cancel"})
		require.False(t, res.IsError, text(res))
		require.Contains(t, text(res), "## Elicitation answered")
		require.Contains(t, text(res), "cancel")

		admin.waitStatus(t, id, "needs_input")
		require.Eventually(t, func() bool {
			return slices.Equal(admin.transitions(t, id), []string{"start", "block_on_elicitation", "unblock_from_elicitation", "pause"})
		}, 30*time.Second, 100*time.Millisecond, "%v", admin.transitions(t, id))
		raw := transcriptRaw(t, admin, id)
		require.Contains(t, raw, `"action":"cancel"`)
		require.Contains(t, raw, "cancelled, moving on")
		// A cancel is a real answer: no banner.
		requireNoBanner(t, admin, id)
		stale := callTool(t, c, "answer_elicitation", map[string]any{"session_id": fmt.Sprint(id), "elicitation_id": e.ID, "action": "decline"})
		require.True(t, stale.IsError)
		require.Contains(t, text(stale), "no pending elicitation")
	})

	t.Run("expired leaves the banner", func(t *testing.T) {
		t.Parallel()
		id := admin.createRunning(t, repo, "@demo elicit 3s Anyone there?\n@demo say nobody answered")
		e := waitElicitation(t, admin, id)
		admin.waitStatus(t, id, "needs_input")
		var banner map[string]any
		require.Eventually(t, func() bool {
			if !slices.Contains(admin.transitions(t, id), "pause") {
				return false
			}
			banner, _ = getSession(t, admin, id)["lost_elicitation"].(map[string]any)
			return banner != nil
		}, 30*time.Second, 100*time.Millisecond, "no lost_elicitation after the agent stopped waiting")
		require.Equal(t, "expired", banner["reason"])
		require.Equal(t, e.ID, banner["request_id"])
		require.Equal(t, "Anyone there?", banner["summary"])
		require.NotEmpty(t, banner["lost_at"])
		require.Contains(t, transcriptRaw(t, admin, id), `"action":"timeout"`)

		c := mcpConnect(t, s, "?tool_groups=sessions")
		shown := text(callTool(t, c, "get_session", map[string]any{"session_id": fmt.Sprint(id)}))
		require.Contains(t, shown, "### Lost elicitation")
		require.Contains(t, shown, "(expired): "+e.ID+" — Anyone there?")
		// Too late to answer: the refusal says it was lost.
		code, body := answer(operator, id, e.ID, `{"action":"accept","content":{"answer":"late"}}`)
		require.Equal(t, http.StatusNotFound, code, body)
		require.Contains(t, body, "lost (expired)")

		// A resume clears it.
		code, body = admin.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/restart", id), `{}`)
		require.Equal(t, http.StatusOK, code, body)
		requireNoBanner(t, admin, id)
	})
}

// requireNoBanner: session id carries no lost_elicitation.
func requireNoBanner(t *testing.T, api restClient, id int64) {
	t.Helper()
	s := getSession(t, api, id)
	require.Nil(t, s["lost_elicitation"], "lost_elicitation: %v", s["lost_elicitation"])
}
