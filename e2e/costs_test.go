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

// costLine is one line of GET /api/v1/costs.
type costLine struct {
	Day                 string  `json:"day"`
	SessionID           int64   `json:"session_id"`
	Kind                string  `json:"kind"`
	Tool                string  `json:"tool"`
	Bytes               int64   `json:"bytes"`
	InputTokens         int64   `json:"input_tokens"`
	OutputTokens        int64   `json:"output_tokens"`
	CacheReadTokens     int64   `json:"cache_read_tokens"`
	CacheCreationTokens int64   `json:"cache_creation_tokens"`
	CostUSD             float64 `json:"cost_usd"`
	Entries             int64   `json:"entries"`
}

type costReport struct {
	From      string     `json:"from"`
	To        string     `json:"to"`
	Total     costLine   `json:"total"`
	ByDay     []costLine `json:"by_day"`
	BySession []costLine `json:"by_session"`
	ByKind    []costLine `json:"by_kind"`
	ByTool    []costLine `json:"by_tool"`
}

func (r costReport) kinds() map[string]costLine {
	out := map[string]costLine{}
	for _, l := range r.ByKind {
		out[l.Kind] = l
	}
	return out
}

func (c restClient) costs(t *testing.T, query string) costReport {
	t.Helper()
	code, body := c.do(t, http.MethodGet, "/api/v1/costs"+query, "")
	require.Equal(t, http.StatusOK, code, body)
	var r costReport
	require.NoError(t, json.Unmarshal([]byte(body), &r), body)
	return r
}

// block is the injected block tag of prompt, as the prompt builder counts
// it: from its opening tag to its closing one.
func block(t *testing.T, prompt, tag string) string {
	t.Helper()
	start := strings.Index(prompt, "<"+tag+">")
	end := strings.Index(prompt, "</"+tag+">")
	require.True(t, start >= 0 && end > start, "no %s block in %q", tag, prompt)
	return prompt[start : end+len("</"+tag+">")]
}

// TestCostsShowInjectedBytesAndReportedUsage: the real binaries on the
// demo runtime. A child session whose hierarchy holds a human's message
// runs a turn that reads its provenance and a session over MCP; the costs
// show its prompt's hierarchy and human-message blocks in bytes (as the
// transcript holds them), its MCP responses by tool with
// get_session_provenance apart, the runtime's reported usage, and its
// inference and the status-summary fork as their own kinds. A bad range is
// refused, naming the field.
func TestCostsShowInjectedBytesAndReportedUsage(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, stackOptions{turns: true, env: map[string][]string{"runner": {"RUNNER_STATUS_SUMMARIES=true"}}})
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)

	router := createREST(t, api, fmt.Sprintf(`{"prompt":"@demo say routing","title":"Router","git_root":%q,"branch":"main"}`, repo))
	rec := s.say(t, humanMessage{Actor: webUIAdmin, Provenance: "web_ui.follow_up", AuthoredInSessionID: router, Content: "Please fix the login bug"})
	require.True(t, rec.Recorded, rec.NotRecordedReason)
	script := fmt.Sprintf(`@demo mcp get_session_provenance {"session_id":"%d"}\n@demo mcp get_session {"session_id":"%d"}\nFix the bug`, router, router)
	child := createREST(t, api, fmt.Sprintf(`{"prompt":%q,"git_root":%q,"branch":"main","slug":"costs-child","parent_session_id":%d}`,
		strings.ReplaceAll(script, `\n`, "\n"), repo, router))
	turns := api.waitTurns(t, child, 1, 90*time.Second)
	prompt := turns[0].Prompt

	var r costReport
	require.Eventually(t, func() bool {
		r = api.costs(t, fmt.Sprintf("?session_id=%d", child))
		k := r.kinds()
		return k["runtime"].Entries == 1 && k["provenance_tool"].Entries == 1 && k["mcp_responses"].Entries == 1 && k["inference"].Entries > 0
	}, 90*time.Second, 250*time.Millisecond, "the child's costs never came: %+v", r)
	k := r.kinds()
	require.Equal(t, int64(len(block(t, prompt, "session-hierarchy"))), k["session_hierarchy"].Bytes, "the hierarchy block, as the agent received it")
	require.Equal(t, int64(len(block(t, prompt, "human-messages"))), k["human_messages"].Bytes, "the human-messages block, as the agent received it")
	require.Equal(t, int64(len(strings.ReplaceAll(script, `\n`, "\n"))), k["turn_text"].Bytes)
	require.Equal(t, costLine{Kind: "runtime", InputTokens: 1000, OutputTokens: 100, CacheReadTokens: 500, CacheCreationTokens: 50,
		CostUSD: 0.0125, Entries: 1}, k["runtime"], "the demo agent's reported usage")
	require.Positive(t, k["provenance_tool"].Bytes)
	require.Positive(t, k["mcp_responses"].Bytes)
	require.Positive(t, k["inference"].Bytes, "the title's model call, its own kind")
	tools := map[string]string{}
	for _, l := range r.ByTool {
		tools[l.Tool] = l.Kind
	}
	require.Equal(t, map[string]string{"get_session_provenance": "provenance_tool", "get_session": "mcp_responses"}, tools)
	require.Len(t, r.BySession, 1)
	require.Equal(t, child, r.BySession[0].SessionID)
	require.Equal(t, r.Total.Bytes, r.BySession[0].Bytes)
	today := time.Now().UTC().Format("2006-01-02")
	require.Equal(t, today, r.To)
	require.Len(t, r.ByDay, 1)
	bySlug := api.costs(t, "?session_id=costs-child")
	require.Equal(t, []int64{child}, []int64{bySlug.BySession[0].SessionID}, "a slug addresses the session as its id does")

	// The pause after the turn's work forks a status summary: its turn is
	// status_summary's, with the runtime's usage, not the session's runtime.
	var all costReport
	require.Eventually(t, func() bool {
		all = api.costs(t, "?from="+today+"&to="+today)
		return all.kinds()["status_summary"].InputTokens >= 1000
	}, 90*time.Second, 250*time.Millisecond, "no status-summary fork was counted: %+v", all)
	sum := all.kinds()["status_summary"]
	require.Positive(t, sum.Bytes, "the fork's prompt")
	require.Zero(t, sum.InputTokens%1000, "the demo's usage, once per fork turn")

	for _, c := range []struct{ query, want string }{
		{"?from=yesterday", `from: must be a day written YYYY-MM-DD (UTC)`},
		{"?from=2026-12-02&to=2026-12-01", "from: must not be after to (2026-12-01); got 2026-12-02"},
	} {
		code, body := api.do(t, http.MethodGet, "/api/v1/costs"+c.query, "")
		require.Equal(t, http.StatusUnprocessableEntity, code, "%s: %s", c.query, body)
		require.Contains(t, readError(t, body).Message, c.want, c.query)
	}
	code, body := api.do(t, http.MethodGet, "/api/v1/costs?session_id=no-such-session", "")
	require.Equal(t, http.StatusNotFound, code, body)
	require.Contains(t, readError(t, body).Message, `session_id "no-such-session" names no session`)
}
