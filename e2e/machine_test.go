package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// machine is the lifecycle state machine's table (services/lifecycle/rules):
// each event's from-states. Every (event, from) pair is a row the walks
// below must drive; the walks themselves, with the status each step leads
// to, are written out by hand, so they check the machine rather than copy it.
var machine = func() map[string][]string {
	m := map[string][]string{}
	for _, t := range rules.Machine() {
		m[t.Event] = t.From
	}
	return m
}()

// step is one event of a walk: the options sent with it, the status it
// leads to and, for an archive, who the archive line names.
type step struct {
	event   string
	opts    map[string]any
	to      string
	archive string // the caller phrase of the archive (and full unarchive) line
	check   func(t *testing.T, session map[string]any)
}

// walk fires every row of the machine at least once, starting from
// waiting: 22 steps, 18 rows. actor is how the surface's archive line
// names a caller that declared acting; anon one that did not.
func walk(acting int64, actor, anon string) []step {
	return []step{
		{event: "start", opts: map[string]any{"running_job_id": "job-e2e-1"}, to: "running"},
		{event: "pause", opts: map[string]any{"paused_by": "e2e"}, to: "needs_input", check: func(t *testing.T, s map[string]any) {
			require.Equal(t, "e2e", s["paused_by"])
		}},
		{event: "sleep", to: "waiting"},
		{event: "archive", opts: map[string]any{"acting_session_id": acting}, to: "archived", archive: actor, check: func(t *testing.T, s map[string]any) {
			require.NotNil(t, s["trash_after"])
		}},
		{event: "unarchive_to_waiting", to: "waiting", check: func(t *testing.T, s map[string]any) {
			require.Nil(t, s["trash_after"])
		}},
		{event: "resume", opts: map[string]any{"running_job_id": "job-e2e-2"}, to: "running", check: func(t *testing.T, s map[string]any) {
			require.Empty(t, s["paused_by"], "resume clears who paused")
		}},
		{event: "block_on_elicitation", to: "needs_input", check: func(t *testing.T, s map[string]any) {
			require.Equal(t, true, s["blocked_on_elicitation"])
		}},
		{event: "unblock_from_elicitation", to: "running", check: func(t *testing.T, s map[string]any) {
			require.Equal(t, false, s["blocked_on_elicitation"])
		}},
		{event: "archive", to: "archived", archive: anon},
		{event: "unarchive_to_needs_input", to: "needs_input", archive: anon},
		{event: "archive", opts: map[string]any{"acting_session_id": acting}, to: "archived", archive: actor},
		{event: "unarchive_to_needs_input", to: "needs_input", archive: anon},
		{event: "resume", to: "running"},
		{event: "fail", opts: map[string]any{"failure_reason": "e2e: the turn crashed"}, to: "failed", check: func(t *testing.T, s map[string]any) {
			require.Equal(t, "e2e: the turn crashed", s["failure_reason"])
		}},
		{event: "resume", opts: map[string]any{"system_recovery": true}, to: "running"},
		{event: "pause", to: "needs_input"},
		{event: "fail", opts: map[string]any{"failure_reason": "e2e: gave up waiting"}, to: "failed"},
		{event: "archive", to: "archived", archive: anon},
		{event: "unarchive_to_failed", to: "failed"},
		{event: "archive", to: "archived", archive: anon},
		{event: "unarchive_to_waiting", to: "waiting"},
		{event: "fail", opts: map[string]any{"failure_reason": "e2e: never started"}, to: "failed"},
	}
}

// firer fires one event at a session through a surface and returns the
// session it answered with, or fails the test.
type firer func(t *testing.T, id int64, event string, opts map[string]any) map[string]any

// driveMachine walks every row of the machine through fire and observes
// each step over REST: GET the session, GET its timeline. It ends in
// failed, then fires every event failed does not allow and expects refuse
// to see each refused, naming the event and the state.
func driveMachine(t *testing.T, api restClient, id int64, steps []step, fire firer, refuse func(t *testing.T, id int64, event string) string) {
	t.Helper()
	rows := map[string]bool{}
	from := "waiting"
	for i, st := range steps {
		require.Contains(t, machine[st.event], from, "step %d: the walk itself is wrong", i)
		rows[st.event+" from "+from] = true

		answered := fire(t, id, st.event, st.opts)
		require.Equal(t, st.to, answered["status"], "step %d (%s from %s)", i, st.event, from)

		// Observed: the session as GET shows it, and the timeline's newest
		// transition line.
		got := getSession(t, api, id)
		require.Equal(t, st.to, got["status"], "step %d (%s from %s)", i, st.event, from)
		require.EqualValues(t, i+2, got["version"], "one committed change per step")
		if st.check != nil {
			st.check(t, got)
		}
		want := fmt.Sprintf("[State Machine] %s → %s (%s)", from, st.to, st.event)
		switch st.event {
		case "archive":
			want = "[State Machine] Session moved to trash by " + st.archive
		case "unarchive_to_needs_input": // the full restoration says so, naming the caller
			want = fmt.Sprintf("[State Machine] Session unarchived with full state restoration by %s: %s → %s (%s)", st.archive, from, st.to, st.event)
		}
		want += adminSuffix(api.key) // the caller, named after the spec's words
		lines := timeline(t, api, id, "transition")
		require.Equal(t, want, lines[len(lines)-1], "step %d", i)
		from = st.to
	}
	var all []string
	for ev, froms := range machine {
		for _, f := range froms {
			all = append(all, ev+" from "+f)
		}
	}
	require.ElementsMatch(t, all, slices.Collect(maps.Keys(rows)), "every row of the machine was driven")
	require.Len(t, timeline(t, api, id, "transition"), len(steps), "one transition line per step")

	require.Equal(t, "failed", from)
	refused := 0
	for _, ev := range slices.Sorted(maps.Keys(machine)) {
		if slices.Contains(machine[ev], from) {
			continue
		}
		msg := refuse(t, id, ev)
		require.Contains(t, msg, fmt.Sprintf("cannot %s session %d: it is failed, and %s is only possible from %s",
			ev, id, ev, strings.Join(machine[ev], " or ")))
		refused++
	}
	require.Equal(t, 9, refused)
	require.Len(t, timeline(t, api, id, "refusal"), refused, "each refusal is on the timeline")
	got := getSession(t, api, id)
	require.Equal(t, "failed", got["status"])
	require.EqualValues(t, len(steps)+1, got["version"], "refusals changed nothing")
}

// getSession is GET /api/v1/sessions/{id}'s session.
func getSession(t *testing.T, api restClient, id int64) map[string]any {
	t.Helper()
	code, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var got struct{ Session map[string]any }
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	return got.Session
}

// timeline is the messages of the session's timeline lines of kind.
func timeline(t *testing.T, api restClient, id int64, kind string) []string {
	t.Helper()
	code, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d/timeline", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var got struct {
		Timeline []struct{ Kind, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	var lines []string
	for _, l := range got.Timeline {
		if l.Kind == kind {
			lines = append(lines, l.Message)
		}
	}
	return lines
}

func createREST(t *testing.T, api restClient, body string) int64 {
	t.Helper()
	code, resp := api.do(t, "POST", "/api/v1/sessions", body)
	require.Equal(t, http.StatusCreated, code, resp)
	var created struct{ Session struct{ ID int64 } }
	require.NoError(t, json.Unmarshal([]byte(resp), &created))
	return created.Session.ID
}

// machineOverREST drives every row through POST .../transition.
func machineOverREST(t *testing.T, api restClient) {
	id := createREST(t, api, `{"prompt":"walk the machine","git_root":"g","title":"REST walk"}`)
	acting := createREST(t, api, `{"prompt":"the harness","git_root":"g"}`)

	fire := func(t *testing.T, id int64, event string, opts map[string]any) map[string]any {
		t.Helper()
		body := map[string]any{"event": event}
		maps.Copy(body, opts)
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		code, resp := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/transition", id), string(raw))
		require.Equal(t, http.StatusOK, code, resp)
		var got struct {
			Session map[string]any
			Message string
		}
		require.NoError(t, json.Unmarshal([]byte(resp), &got))
		require.True(t, strings.HasPrefix(got.Message, fmt.Sprintf("Session %d: ", id)), got.Message)
		return got.Session
	}
	refuse := func(t *testing.T, id int64, event string) string {
		t.Helper()
		code, resp := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/transition", id), fmt.Sprintf(`{"event":%q}`, event))
		require.Equal(t, http.StatusUnprocessableEntity, code, resp)
		return resp
	}
	driveMachine(t, api, id, walk(acting, fmt.Sprintf("session #%d via the REST API", acting), "a caller of the REST API"), fire, refuse)

	// An unknown event is the caller's error, naming the events.
	for _, ev := range []string{"explode", "restart", ""} {
		code, resp := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/transition", id), fmt.Sprintf(`{"event":%q}`, ev))
		require.Equal(t, http.StatusUnprocessableEntity, code, resp)
		require.Contains(t, resp, "start, pause, resume, sleep, block_on_elicitation, unblock_from_elicitation, fail, archive, "+
			"unarchive_to_waiting, unarchive_to_failed, unarchive_to_needs_input")
	}
	code, resp := api.do(t, "POST", "/api/v1/sessions/424242/transition", `{"event":"start"}`)
	require.Equal(t, http.StatusNotFound, code, resp)

	// Notes are edited like the other fields.
	code, resp = api.do(t, "PATCH", fmt.Sprintf("/api/v1/sessions/%d", id), `{"notes":"walked every row"}`)
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, "walked every row", getSession(t, api, id)["notes"])
	require.Contains(t, timeline(t, api, id, "note"), "[Session] updated notes"+adminSuffix(api.key))
}

// mcpConnect opens an initialized MCP client on the gateway.
func mcpConnect(t *testing.T, s *stack, query string) *mcpclient.Client {
	t.Helper()
	c, err := mcpclient.NewStreamableHttpClient("http://"+s.addr["gateway"]+"/mcp"+query,
		transport.WithHTTPHeaders(map[string]string{"X-API-Key": s.apiKey}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(context.Background()))
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "zimmer-e2e", Version: "1"}
	_, err = c.Initialize(context.Background(), init)
	require.NoError(t, err)
	return c
}

// callTool calls a tool and returns its result.
func callTool(t *testing.T, c *mcpclient.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	require.NoError(t, err)
	return res
}

// toolSession is the session in a tool result's structured content.
func toolSession(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	require.False(t, res.IsError, text(res))
	content, ok := res.StructuredContent.(map[string]any)
	require.True(t, ok, "structured content: %T", res.StructuredContent)
	s, ok := content["session"].(map[string]any)
	require.True(t, ok, "%v", content)
	return s
}

// machineOverMCP drives every row through action_session transition, then
// the self-session server's narrowed action_session.
func machineOverMCP(t *testing.T, s *stack, api restClient) {
	c := mcpConnect(t, s, "?tool_groups=sessions")
	start := func(title string) int64 {
		sess := toolSession(t, callTool(t, c, "start_session", map[string]any{"prompt": "walk the machine", "git_root": "g", "title": title}))
		return int64(sess["id"].(float64))
	}
	id := start("MCP walk")
	acting := start("the agent")

	fire := func(t *testing.T, id int64, event string, opts map[string]any) map[string]any {
		t.Helper()
		args := map[string]any{"action": "transition", "session_id": fmt.Sprint(id), "event": event}
		maps.Copy(args, opts)
		return toolSession(t, callTool(t, c, "action_session", args))
	}
	refuse := func(t *testing.T, id int64, event string) string {
		t.Helper()
		res := callTool(t, c, "action_session", map[string]any{"action": "transition", "session_id": id, "event": event})
		require.True(t, res.IsError, "%s: %s", event, text(res))
		return text(res)
	}
	driveMachine(t, api, id, walk(acting, fmt.Sprintf("session #%d via the MCP API", acting), "an undeclared MCP API caller"), fire, refuse)

	res := callTool(t, c, "action_session", map[string]any{"action": "transition", "session_id": id, "event": "explode"})
	require.True(t, res.IsError)
	require.Contains(t, text(res), `unknown event "explode"; use one of start, pause, resume`)
	res = callTool(t, c, "get_session", map[string]any{"session_id": id, "include_logs": true})
	require.False(t, res.IsError, text(res))
	require.Contains(t, text(res), "[transition] [State Machine] archived → failed (unarchive_to_failed)")
	require.Contains(t, text(res), fmt.Sprintf("[refusal] [State Machine] refused: cannot start session %d: it is failed", id))

	// The self-session server: a session edits and archives itself, and
	// nothing else.
	self := mcpConnect(t, s, "?tool_groups=self_session")
	me := start("self")
	res = callTool(t, self, "action_session", map[string]any{"action": "update_notes", "session_id": me, "notes": "remember: ship on Friday"})
	require.Contains(t, text(res), "notes updated")
	res = callTool(t, self, "action_session", map[string]any{"action": "update_title", "session_id": me, "title": "Self-managed"})
	require.Contains(t, text(res), "title updated")
	res = callTool(t, self, "action_session", map[string]any{"action": "set_heartbeat", "session_id": me, "enabled": true, "interval_seconds": 300})
	require.Contains(t, text(res), "heartbeat on, every 300 s")
	for _, action := range []string{"pause", "transition", "restart"} {
		res = callTool(t, self, "action_session", map[string]any{"action": action, "session_id": me, "event": "start"})
		require.True(t, res.IsError, action)
		require.Contains(t, text(res), "offers only update_notes, update_title, set_heartbeat, archive")
	}
	got := getSession(t, api, me)
	require.Equal(t, "remember: ship on Friday", got["notes"])
	require.Equal(t, "Self-managed", got["title"])
	require.Equal(t, true, got["heartbeat_enabled"])
	require.EqualValues(t, 300, got["heartbeat_interval_seconds"])
	require.Equal(t, "waiting", got["status"], "the refused actions changed nothing")

	archived := toolSession(t, callTool(t, self, "action_session", map[string]any{"action": "archive", "session_id": me, "acting_session_id": me, "force": true}))
	require.Equal(t, "archived", archived["status"])
	lines := timeline(t, api, me, "transition")
	require.Equal(t, fmt.Sprintf("[State Machine] Session moved to trash by session #%d via the self-session MCP server", me)+adminSuffix(s.apiKey), lines[len(lines)-1])
	require.Empty(t, timeline(t, api, me, "refusal"), "refused actions never reached lifecycle")
}
