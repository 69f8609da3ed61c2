package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// minted is a credential as the mint answered it.
type minted struct {
	ID        string   `json:"id"`
	Token     string   `json:"token"`
	Scopes    []string `json:"scopes"`
	CreatedAt string   `json:"created_at"`
}

// mintREST mints a credential for session id with an admin key.
func mintREST(t *testing.T, admin restClient, id int64) minted {
	t.Helper()
	code, body := admin.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/credentials", id), "")
	require.Equal(t, http.StatusCreated, code, body)
	var resp struct{ Credential minted }
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&resp), "the answer is exactly id, token, scopes, created_at: %s", body)
	return resp.Credential
}

// mcpAs opens an initialized MCP client presenting token.
func mcpAs(t *testing.T, s *stack, query, token string) *mcpclient.Client {
	t.Helper()
	c, err := mcpclient.NewStreamableHttpClient("http://"+s.addr["gateway"]+"/mcp"+query,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Start(context.Background()))
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "zimmer-e2e-agent", Version: "1"}
	_, err = c.Initialize(context.Background(), init)
	require.NoError(t, err)
	return c
}

func listTools(t *testing.T, c *mcpclient.Client) (names, actions []string) {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Name == "action_session" {
			for _, a := range tool.InputSchema.Properties["action"].(map[string]any)["enum"].([]any) {
				actions = append(actions, a.(string))
			}
		}
	}
	sort.Strings(names)
	return names, actions
}

// expect is what a session credential gets from one REST operation: on
// its own session and on another (for a route naming none, own).
type expect struct{ own, other int }

const (
	ok      = http.StatusOK
	created = http.StatusCreated
	denied  = http.StatusForbidden
)

// restAccess is every REST operation with what each credential gets: one
// of a session created with the default groups (self, sessions.read,
// sessions.start) and one created with self_session only (self). The walk
// fails on an operation missing here, so a new route is decided, not
// opened by default. ArchiveSession of its own session is walked last, on
// its own (it revokes the credential).
var restAccess = map[string]struct{ sessions, selfOnly expect }{
	"ListSessions":        {expect{ok, ok}, expect{denied, denied}},
	"CreateSession":       {expect{created, created}, expect{denied, denied}},
	"GetSession":          {expect{ok, ok}, expect{ok, denied}},
	"UpdateSession":       {expect{ok, denied}, expect{ok, denied}},
	"SetSessionHeartbeat": {expect{ok, denied}, expect{ok, denied}},
	"GetSessionTimeline":  {expect{ok, ok}, expect{ok, denied}},
	"ListSessionEvents":   {expect{ok, ok}, expect{ok, denied}},
	"GetTranscript":       {expect{ok, ok}, expect{ok, denied}},
	// Read like the transcript (sessions.read reads any session's); the
	// walk's sessions run no turn, so the runner made no clone (404).
	"GetClone":                {expect{http.StatusNotFound, http.StatusNotFound}, expect{http.StatusNotFound, denied}},
	"ArchiveSession":          {expect{0, denied}, expect{0, denied}},
	"DeleteSession":           {expect{denied, denied}, expect{denied, denied}},
	"GetSettings":             {expect{denied, denied}, expect{denied, denied}},
	"UpdateSettings":          {expect{denied, denied}, expect{denied, denied}},
	"PauseSession":            {expect{denied, denied}, expect{denied, denied}},
	"SleepSession":            {expect{denied, denied}, expect{denied, denied}},
	"BulkArchiveSessions":     {expect{denied, denied}, expect{denied, denied}},
	"UnarchiveSession":        {expect{denied, denied}, expect{denied, denied}},
	"RestartSession":          {expect{denied, denied}, expect{denied, denied}},
	"FailSession":             {expect{denied, denied}, expect{denied, denied}},
	"TransitionSession":       {expect{denied, denied}, expect{denied, denied}},
	"MintSessionCredential":   {expect{denied, denied}, expect{denied, denied}},
	"RevokeSessionCredential": {expect{denied, denied}, expect{denied, denied}},
	// The queue checks the session before the message: on its own session
	// the walk's message id (noMessage) is unknown, 404.
	"ListEnqueuedMessages":         {expect{ok, ok}, expect{ok, denied}},
	"GetEnqueuedMessage":           {expect{http.StatusNotFound, http.StatusNotFound}, expect{http.StatusNotFound, denied}},
	"EnqueueMessage":               {expect{ok, denied}, expect{ok, denied}},
	"UpdateEnqueuedMessage":        {expect{http.StatusNotFound, denied}, expect{http.StatusNotFound, denied}},
	"DeleteEnqueuedMessage":        {expect{http.StatusNotFound, denied}, expect{http.StatusNotFound, denied}},
	"SendEnqueuedMessageNow":       {expect{http.StatusNotFound, denied}, expect{http.StatusNotFound, denied}},
	"InterruptWithEnqueuedMessage": {expect{http.StatusNotFound, denied}, expect{http.StatusNotFound, denied}},
	// A follow-up of its own session reaches the queue, which refuses the
	// walk's empty prompt (422): the walk starts no turn.
	"FollowUp": {expect{http.StatusUnprocessableEntity, denied}, expect{http.StatusUnprocessableEntity, denied}},
	// The inbox is the operator's; the alerts page is read with
	// sessions.read (the sessions group's get_alerts).
	"ListNotifications":        {expect{denied, denied}, expect{denied, denied}},
	"MarkNotificationRead":     {expect{denied, denied}, expect{denied, denied}},
	"DismissNotification":      {expect{denied, denied}, expect{denied, denied}},
	"MarkAllNotificationsRead": {expect{denied, denied}, expect{denied, denied}},
	"ListAlerts":               {expect{ok, ok}, expect{denied, denied}},
	// Triggers: a credential lists its own session's, and any session's
	// with sessions.read, as every read; it cancels its own (the walk's
	// trigger id, noMessage, is none: 404); Pause Until and refresh are
	// the operator's.
	"ListTriggers": {expect{ok, ok}, expect{ok, denied}},
	// Slack triggers start sessions for people in a channel: the
	// operator's, never an agent's (issue 26).
	"ListSlackTriggers":  {expect{denied, denied}, expect{denied, denied}},
	"CreateSlackTrigger": {expect{denied, denied}, expect{denied, denied}},
	"DeleteSlackTrigger": {expect{denied, denied}, expect{denied, denied}},
	"CancelTrigger":      {expect{http.StatusNotFound, denied}, expect{http.StatusNotFound, denied}},
	"PauseUntil":         {expect{denied, denied}, expect{denied, denied}},
	"RefreshSession":     {expect{denied, denied}, expect{denied, denied}},
	// Elicitations: a credential reads its own session's pending question,
	// as every read; it never answers one, its own agent's least of all.
	"ListElicitations":  {expect{ok, ok}, expect{ok, denied}},
	"AnswerElicitation": {expect{denied, denied}, expect{denied, denied}},
	// The login pools are the admin's: no credential reads them (issue 29).
	"ListAgentAccounts": {expect{denied, denied}, expect{denied, denied}},
	// Categories, stars and the spot queue are the operator's (issues 28
	// and 29: no session_scope), the turn slots' limit the admin's.
	"ListCategories":     {expect{denied, denied}, expect{denied, denied}},
	"CreateCategory":     {expect{denied, denied}, expect{denied, denied}},
	"UpdateCategory":     {expect{denied, denied}, expect{denied, denied}},
	"DeleteCategory":     {expect{denied, denied}, expect{denied, denied}},
	"StarSession":        {expect{denied, denied}, expect{denied, denied}},
	"UnstarSession":      {expect{denied, denied}, expect{denied, denied}},
	"PauseIntoSpotQueue": {expect{denied, denied}, expect{denied, denied}},
	"GetTurnSlots":       {expect{denied, denied}, expect{denied, denied}},
	// The costs are the operator's (issue 28: no session_scope).
	"GetCosts":        {expect{denied, denied}, expect{denied, denied}},
	"UpdateTurnSlots": {expect{denied, denied}, expect{denied, denied}},
}

// pendingMessages are the ids of session id's messages still to be
// delivered.
func pendingMessages(t *testing.T, api restClient, id int64) []int64 {
	t.Helper()
	code, body := api.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var list struct {
		EnqueuedMessages []struct {
			ID     int64  `json:"id"`
			Status string `json:"status"`
		} `json:"enqueued_messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &list), body)
	var ids []int64
	for _, m := range list.EnqueuedMessages {
		if m.Status == "pending" {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// noMessage is the enqueued-message id the walk names: none has it.
const noMessage = "999999"

// restBodies are the bodies the walk sends, by operation.
var restBodies = map[string]string{
	"CreateSession":         `{"prompt":"a child","git_root":"g"}`,
	"UpdateSession":         `{"notes":"walked"}`,
	"SetSessionHeartbeat":   `{"enabled":true}`,
	"UpdateSettings":        `{"provenance_via_mcp_enabled":true}`,
	"BulkArchiveSessions":   `{"session_ids":[%[1]d]}`,
	"FailSession":           `{"failure_reason":"walked"}`,
	"TransitionSession":     `{"event":"start"}`,
	"EnqueueMessage":        `{"content":"walked"}`,
	"UpdateEnqueuedMessage": `{"position":1}`,
}

// TestSessionCredentials drives issue 10's session credentials on the real
// binaries: an admin mints one per session (the token shown once); it
// opens exactly the REST routes and MCP tools its session's groups allow,
// for its own session (another is 403), acting as its session; archive,
// delete and an admin revoke it, after which it is 401 naming why; and no
// write with it commits after its revocation does.
func TestSessionCredentials(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	base := "http://" + s.addr["gateway"]
	admin := restClient{base: base, key: s.apiKey}
	operator := restClient{base: base, key: s.operatorKey}
	adminKey := "admin key …" + principal.KeyHint(s.apiKey)

	own := createREST(t, operator, `{"prompt":"the agent","git_root":"g","slug":"agent-own"}`)
	other := createREST(t, operator, `{"prompt":"someone else","git_root":"g","slug":"agent-other"}`)
	narrow := createREST(t, operator, `{"prompt":"a narrow agent","git_root":"g","mcp_tool_groups":["self_session"]}`)
	require.Equal(t, []any{"sessions"}, getSession(t, operator, own)["mcp_tool_groups"])
	require.Equal(t, []any{"self_session"}, getSession(t, operator, narrow)["mcp_tool_groups"])

	// Minting is an admin's.
	code, body := operator.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/credentials", own), "")
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, readError(t, body).Message, "MintSessionCredential needs an admin key (ZIMMER_ADMIN_API_KEYS)")
	cred := mintREST(t, admin, own)
	require.Regexp(t, `^zsc_[A-Za-z0-9_-]{43}$`, cred.Token)
	require.Equal(t, []string{"self", "sessions.read", "sessions.start"}, cred.Scopes)
	narrowCred := mintREST(t, admin, narrow)
	require.Equal(t, []string{"self"}, narrowCred.Scopes)
	for _, line := range timeline(t, admin, own, "note") {
		require.NotContains(t, line, cred.Token, "the token is never written down")
	}

	t.Run("REST walk", func(t *testing.T) {
		code, body := admin.do(t, http.MethodGet, "/openapi.json", "")
		require.Equal(t, http.StatusOK, code)
		var doc struct {
			Paths map[string]map[string]struct {
				OperationID string `json:"operationId"`
			} `json:"paths"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &doc))
		walked := map[string]bool{}
		for path, ops := range doc.Paths {
			for method, op := range ops {
				_, rpc, _ := strings.Cut(op.OperationID, "_")
				access, known := restAccess[rpc]
				require.True(t, known, "%s %s (%s) is not decided for session credentials", method, path, rpc)
				walked[rpc] = true
				for _, c := range []struct {
					name   string
					token  string
					expect expect
				}{{"sessions", cred.Token, access.sessions}, {"self_session", narrowCred.Token, access.selfOnly}} {
					api := restClient{base: base, bearer: c.token}
					owner := own
					if c.name == "self_session" {
						owner = narrow
					}
					targets := map[int64]int{owner: c.expect.own}
					if strings.Contains(path, "{session_id}") {
						targets[other] = c.expect.other
					}
					for target, want := range targets {
						if want == 0 {
							continue // its own archive: walked last
						}
						p := strings.ReplaceAll(path, "{session_id}", fmt.Sprint(target))
						p = strings.ReplaceAll(p, "{credential_id}", narrowCred.ID)
						p = strings.ReplaceAll(p, "{message_id}", noMessage)
						p = strings.ReplaceAll(p, "{notification_id}", noMessage)
						p = strings.ReplaceAll(p, "{trigger_id}", noMessage)
						p = strings.ReplaceAll(p, "{elicitation_id}", noMessage)
						p = strings.ReplaceAll(p, "{category_id}", noMessage)
						reqBody := ""
						if b, ok := restBodies[rpc]; ok {
							reqBody = fmt.Sprintf(b, target)
						}
						code, resp := api.do(t, strings.ToUpper(method), p, reqBody)
						require.Equal(t, want, code, "%s credential: %s %s: %s", c.name, strings.ToUpper(method), p, resp)
						if code == denied {
							e := readError(t, resp)
							require.Equal(t, "Forbidden", e.Error, resp)
						}
					}
				}
			}
		}
		require.Len(t, walked, len(restAccess), "every decided operation is a route")

		// What the walk wrote, it wrote as its own session: children of
		// its own, edits of its own, nothing else.
		children := 0
		code, body = admin.do(t, http.MethodGet, "/api/v1/sessions?per_page=100", "")
		require.Equal(t, http.StatusOK, code, body)
		var list struct{ Sessions []map[string]any }
		require.NoError(t, json.Unmarshal([]byte(body), &list))
		for _, sess := range list.Sessions {
			if sess["prompt"] == "a child" {
				children++
				require.Equal(t, float64(own), sess["parent_session_id"], "a credential starts children of its own session")
			}
		}
		require.Equal(t, 1, children)
		require.Equal(t, "walked", getSession(t, admin, own)["notes"])
		require.Equal(t, "walked", getSession(t, admin, narrow)["notes"])
		require.Empty(t, getSession(t, admin, other)["notes"], "another session is untouched")
		code, body = admin.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", own), "")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, fmt.Sprintf(`"acting_session_id":%d`, own), "a credential queues as its own session")
		code, body = admin.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", other), "")
		require.Equal(t, http.StatusOK, code, body)
		require.NotContains(t, body, "walked", "nothing is queued on another session")
		// What the walk queued goes, before the queue delivers it as a turn
		// and before the archive below, which the queue's guard would refuse
		// over it.
		for _, session := range []int64{own, narrow} {
			for _, id := range pendingMessages(t, admin, session) {
				code, body := admin.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages/%d", session, id), "")
				require.Equal(t, http.StatusOK, code, body)
			}
		}
		require.Equal(t, "waiting", getSession(t, admin, other)["status"])
		// The credential's own write is attributed to it (the queue's
		// "[Queue] message #N queued" lines, written since, are the queue's).
		byCredential := fmt.Sprintf("(by session #%d's credential)", own)
		require.True(t, slices.ContainsFunc(timeline(t, admin, own, "note"), func(l string) bool { return strings.HasSuffix(l, byCredential) }),
			"a note line %s", byCredential)
	})

	t.Run("a credential on another session", func(t *testing.T) {
		api := restClient{base: base, key: cred.Token}
		code, body := api.do(t, http.MethodPatch, fmt.Sprintf("/api/v1/sessions/%d", other), `{"notes":"hijacked"}`)
		require.Equal(t, http.StatusForbidden, code, body)
		require.Equal(t, fmt.Sprintf("session #%d's credential may act only on its own session, not on session #%d; that needs an operator key", own, other),
			readError(t, body).Message)
		code, body = api.do(t, http.MethodPatch, "/api/v1/sessions/agent-other", `{"notes":"hijacked"}`)
		require.Equal(t, http.StatusForbidden, code, body)
		code, body = api.do(t, http.MethodPatch, fmt.Sprintf("/api/v1/sessions/%d", own), `{"precedence":1000}`)
		require.Equal(t, http.StatusForbidden, code, body)
		require.Contains(t, readError(t, body).Message, "may edit only its title, notes and heartbeat; precedence need an operator key")
		code, body = api.do(t, http.MethodPatch, fmt.Sprintf("/api/v1/sessions/%d", own), `{"push_notifications":false}`)
		require.Equal(t, http.StatusForbidden, code, body)
		require.Contains(t, readError(t, body).Message, "push_notifications need an operator key", "muting the operator's pushes is the operator's")
		code, body = api.do(t, http.MethodPost, "/api/v1/sessions", fmt.Sprintf(`{"prompt":"p","git_root":"g","parent_session_id":%d}`, other))
		require.Equal(t, http.StatusForbidden, code, body)
		code, body = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", own), fmt.Sprintf(`{"acting_session_id":%d}`, other))
		require.Equal(t, http.StatusForbidden, code, body)
		require.Contains(t, readError(t, body).Message, fmt.Sprintf("acting_session_id %d is not the session this credential belongs to", other))
		// The queue's routes too (a follow-up was accepted, 202, and stored
		// as its own session: issue 20 item 7), as MCP refuses it.
		for _, route := range []struct{ path, body string }{
			{fmt.Sprintf("/api/v1/sessions/%d/follow_up", own), fmt.Sprintf(`{"prompt":"as another","acting_session_id":%d}`, other)},
			{fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", own), fmt.Sprintf(`{"content":"as another","acting_session_id":%d}`, other)},
		} {
			code, body = api.do(t, http.MethodPost, route.path, route.body)
			require.Equal(t, http.StatusForbidden, code, "%s: %s", route.path, body)
			require.Contains(t, readError(t, body).Message, fmt.Sprintf("acting_session_id %d is not the session this credential belongs to (#%d)", other, own))
		}
		require.Empty(t, pendingMessages(t, admin, own), "a refused call queues nothing")
		// A child gets no more than its creator may set on itself.
		code, body = api.do(t, http.MethodPost, "/api/v1/sessions", `{"prompt":"p","git_root":"g","precedence":1000}`)
		require.Equal(t, http.StatusForbidden, code, body)
		require.Contains(t, readError(t, body).Message, "may not set on its child what it may not set on itself; leave precedence out")
		require.Empty(t, getSession(t, admin, other)["notes"])
		require.Equal(t, "waiting", getSession(t, admin, own)["status"])
	})

	t.Run("MCP sees exactly its tools", func(t *testing.T) {
		selfTools := []string{"action_session", "get_session", "get_session_provenance", "send_push_notification", "wake_me_up_later",
			"wake_me_up_when_session_changes_state"}
		selfActions := []string{"update_notes", "update_title", "set_heartbeat", "archive"}
		for _, query := range []string{"", "?tool_groups=sessions", "?tool_groups=self_session", "?tool_groups=sessions,self_session,bogus"} {
			names, actions := listTools(t, mcpAs(t, s, query, cred.Token))
			require.Equal(t, []string{"action_session", "get_alerts", "get_session", "get_session_provenance", "quick_search_sessions",
				"search_triggers", "send_push_notification", "start_session", "wake_me_up_later", "wake_me_up_when_session_changes_state"}, names, query)
			require.Equal(t, selfActions, actions, query)
			names, actions = listTools(t, mcpAs(t, s, query, narrowCred.Token))
			require.Equal(t, selfTools, names, query)
			require.Equal(t, selfActions, actions, query)
		}

		c := mcpAs(t, s, "?tool_groups=sessions", cred.Token)
		res := callTool(t, c, "quick_search_sessions", map[string]any{"q": "agent"})
		require.False(t, res.IsError, text(res))
		res = callTool(t, c, "get_alerts", map[string]any{})
		require.False(t, res.IsError, "sessions.read reads the alerts: %s", text(res))
		for _, id := range []int64{own, other} {
			require.Equal(t, float64(id), toolSession(t, callTool(t, c, "get_session", map[string]any{"session_id": id}))["id"])
			res = callTool(t, c, "get_session_provenance", map[string]any{"session_id": id})
			require.False(t, res.IsError, text(res))
		}
		child := toolSession(t, callTool(t, c, "start_session", map[string]any{"prompt": "an MCP child", "git_root": "g"}))
		require.Equal(t, float64(own), child["parent_session_id"])
		res = callTool(t, c, "start_session", map[string]any{"prompt": "p", "git_root": "g", "parent_session_id": other})
		require.True(t, res.IsError)
		require.Contains(t, text(res), "starts only children of its own session")

		require.Equal(t, "n", toolSession(t, callTool(t, c, "action_session", map[string]any{"action": "update_notes", "session_id": own, "notes": "n"}))["notes"])
		toolSession(t, callTool(t, c, "action_session", map[string]any{"action": "update_title", "session_id": "agent-own", "title": "T"}))
		toolSession(t, callTool(t, c, "action_session", map[string]any{"action": "set_heartbeat", "session_id": own, "enabled": false}))
		for _, args := range []map[string]any{
			{"action": "update_notes", "session_id": other, "notes": "hijacked"},
			{"action": "archive", "session_id": other},
			{"action": "archive", "session_id": own, "acting_session_id": other},
			{"action": "pause", "session_id": own},
			{"action": "transition", "session_id": own, "event": "start"},
			{"action": "bulk_archive", "session_ids": []any{other}},
		} {
			res = callTool(t, c, "action_session", args)
			require.True(t, res.IsError, "%v: %s", args, text(res))
		}
		// Wake-ups: its own session's only; it reads the armed set with
		// sessions.read.
		res = callTool(t, c, "wake_me_up_later", map[string]any{"session_id": other, "delay": "1h"})
		require.True(t, res.IsError, text(res))
		require.Contains(t, text(res), fmt.Sprintf("is not your session: this credential arms wakes of session #%d only", own))
		res = callTool(t, c, "search_triggers", map[string]any{"session_id": own})
		require.False(t, res.IsError, text(res))
		require.Contains(t, text(res), "No armed triggers match.")
		require.Empty(t, getSession(t, admin, other)["notes"])
		require.Equal(t, "waiting", getSession(t, admin, other)["status"])

		n := mcpAs(t, s, "?tool_groups=sessions", narrowCred.Token)
		for _, tool := range []string{"get_session", "get_session_provenance"} {
			res = callTool(t, n, tool, map[string]any{"session_id": other})
			require.True(t, res.IsError, "%s: %s", tool, text(res))
			require.Contains(t, text(res), "may act only on its own session")
		}
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "start_session", map[string]any{"prompt": "p", "git_root": "g"}
		if res, err := n.CallTool(context.Background(), req); err == nil {
			require.True(t, res.IsError, text(res))
		}
	})

	t.Run("archive revokes", func(t *testing.T) {
		c := mcpAs(t, s, "", cred.Token)
		archived := toolSession(t, callTool(t, c, "action_session", map[string]any{"action": "archive", "session_id": own}))
		require.Equal(t, "archived", archived["status"])
		lines := timeline(t, admin, own, "transition")
		require.Equal(t, fmt.Sprintf("[State Machine] Session moved to trash by session #%d via the self-session MCP server (by session #%d's credential)", own, own),
			last(lines), "the archive is attributed to the credential")
		require.Contains(t, timeline(t, admin, own, "note"),
			fmt.Sprintf("[Credentials] session credential %s revoked: session #%d was archived", cred.ID, own))

		revoked := fmt.Sprintf("credential revoked: session #%d was archived", own)
		for _, api := range []restClient{{base: base, key: cred.Token}, {base: base, bearer: cred.Token}} {
			code, body := api.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", own), "")
			require.Equal(t, http.StatusUnauthorized, code, body)
			require.Equal(t, revoked, readError(t, body).Message)
		}
		// The MCP session it opened is refused too: the gateway answers 401.
		res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
		require.ErrorIs(t, err, transport.ErrAuthorizationRequired, "%v", res)

		// Restored, the session's credential stays revoked; a new one works.
		code, body := admin.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/unarchive", own), "{}")
		require.Equal(t, http.StatusOK, code, body)
		code, body = (restClient{base: base, key: cred.Token}).do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", own), "")
		require.Equal(t, http.StatusUnauthorized, code, body)
		fresh := mintREST(t, admin, own)
		code, body = (restClient{base: base, key: fresh.Token}).do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", own), "")
		require.Equal(t, http.StatusOK, code, body)
	})

	t.Run("an admin revokes", func(t *testing.T) {
		code, body := operator.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/sessions/%d/credentials/%s", narrow, narrowCred.ID), "")
		require.Equal(t, http.StatusForbidden, code, body)
		code, body = admin.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/sessions/%d/credentials/%s", narrow, narrowCred.ID), "")
		require.Equal(t, http.StatusOK, code, body)
		var resp struct {
			Credential struct {
				ID            string `json:"id"`
				SessionID     int64  `json:"session_id"`
				RevokedAt     string `json:"revoked_at"`
				RevokedReason string `json:"revoked_reason"`
			}
		}
		require.NoError(t, json.Unmarshal([]byte(body), &resp))
		require.Equal(t, narrowCred.ID, resp.Credential.ID)
		require.Equal(t, narrow, resp.Credential.SessionID)
		require.NotEmpty(t, resp.Credential.RevokedAt)
		require.Equal(t, adminKey+" revoked it", resp.Credential.RevokedReason)
		require.NotContains(t, body, "token")

		code, body = (restClient{base: base, bearer: narrowCred.Token}).do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", narrow), "")
		require.Equal(t, http.StatusUnauthorized, code, body)
		require.Equal(t, "credential revoked: "+adminKey+" revoked it", readError(t, body).Message)

		code, body = (restClient{base: base, key: "zsc_" + strings.Repeat("A", 43)}).do(t, http.MethodGet, "/api/v1/sessions", "")
		require.Equal(t, http.StatusUnauthorized, code, body)
		require.Equal(t, "unknown session credential: no credential was minted with this token", readError(t, body).Message)
	})

	t.Run("delete revokes", func(t *testing.T) {
		victim := createREST(t, operator, `{"prompt":"to delete","git_root":"g"}`)
		c := mintREST(t, admin, victim)
		code, body := admin.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/sessions/%d", victim), "")
		require.Equal(t, http.StatusNoContent, code, body)
		code, body = (restClient{base: base, key: c.Token}).do(t, http.MethodGet, "/api/v1/sessions", "")
		require.Equal(t, http.StatusUnauthorized, code, body)
		require.Equal(t, fmt.Sprintf("credential revoked: session #%d was deleted", victim), readError(t, body).Message)
	})

	t.Run("no write commits after its revocation", func(t *testing.T) {
		raced := createREST(t, operator, `{"prompt":"raced","git_root":"g"}`)
		c := mintREST(t, admin, raced)
		agent := restClient{base: base, key: c.Token}

		const calls = 50
		type result struct {
			code              int
			body              string
			started, returned time.Time
		}
		results := make([]result, calls)
		var (
			wg        sync.WaitGroup
			revokedAt time.Time
			revoke    int
		)
		start := make(chan struct{})
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				time.Sleep(time.Duration(i) * 2 * time.Millisecond)
				r := result{started: time.Now()}
				r.code, r.body = agent.do(t, http.MethodPatch, fmt.Sprintf("/api/v1/sessions/%d", raced), fmt.Sprintf(`{"notes":"call %d"}`, i))
				r.returned = time.Now()
				results[i] = r
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			time.Sleep(40 * time.Millisecond)
			revoke, _ = admin.do(t, http.MethodDelete, fmt.Sprintf("/api/v1/sessions/%d/credentials/%s", raced, c.ID), "")
			revokedAt = time.Now()
		}()
		close(start)
		wg.Wait()
		require.Equal(t, http.StatusOK, revoke)

		// Writes of one session commit in the order of their lines: each
		// holds the session's lock from its line to its commit.
		code, body := admin.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/timeline", raced), "")
		require.Equal(t, http.StatusOK, code, body)
		var tl struct{ Timeline []struct{ Message string } }
		require.NoError(t, json.Unmarshal([]byte(body), &tl))
		revocation, before, after := -1, 0, 0
		for i, l := range tl.Timeline {
			switch {
			case strings.Contains(l.Message, "revoked: "+adminKey):
				revocation = i
			case strings.HasPrefix(l.Message, "[Session] updated notes"):
				if revocation < 0 {
					before++
				} else {
					after++
				}
			}
		}
		require.GreaterOrEqual(t, revocation, 0, "the revocation's line")
		require.Zero(t, after, "writes committed after the revocation")

		succeeded := 0
		for i, r := range results {
			if r.code == http.StatusOK {
				succeeded++
				require.False(t, r.started.After(revokedAt), "call %d started after the revocation returned, yet succeeded", i)
				continue
			}
			require.Equal(t, http.StatusUnauthorized, r.code, "call %d: %s", i, r.body)
			require.Equal(t, "credential revoked: "+adminKey+" revoked it", readError(t, r.body).Message)
		}
		t.Logf("%d writes committed before the revocation, %d were refused", succeeded, calls-succeeded)
		require.Equal(t, succeeded, before, "each successful write has its line, before the revocation's")
		require.NotZero(t, succeeded, "no write ran before the revocation: the race proved nothing")
		require.Less(t, succeeded, calls, "no write ran after the revocation: the race proved nothing")
		version := getSession(t, admin, raced)["version"]
		require.Equal(t, fmt.Sprint(1+succeeded), fmt.Sprint(version), "one version per committed write")
	})
}
