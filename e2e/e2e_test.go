// Package e2e_test drives the real binaries against a real Postgres and a
// real Temporal dev server, through every surface: REST, gRPC and MCP.
package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}

	var parentID int64
	t.Run("REST", func(t *testing.T) {
		code, body := api.do(t, "POST", "/api/v1/sessions", `{"prompt":"coordinate the release","git_root":"git@example.com:acme/app.git","title":"Release router","slug":"release-router","agent_root":"zimmer","custom_metadata":{"ticket":"REL-1"}}`)
		require.Equal(t, http.StatusCreated, code, body)
		var created struct{ Session map[string]any }
		require.NoError(t, json.Unmarshal([]byte(body), &created))
		id, ok := created.Session["id"].(float64)
		require.True(t, ok, "id is a JSON number: %s", body)
		parentID = int64(id)
		require.Equal(t, "waiting", created.Session["status"])
		require.Equal(t, "api", created.Session["genesis"])
		require.Equal(t, "git@example.com:acme/app.git", created.Session["git_root"], "snake_case keys")

		for _, ref := range []string{fmt.Sprint(parentID), "release-router"} {
			code, body = api.do(t, "GET", "/api/v1/sessions/"+ref, "")
			require.Equal(t, http.StatusOK, code, body)
			require.Contains(t, body, `"title":"Release router"`)
		}

		code, body = api.do(t, "GET", "/api/v1/sessions?status=waiting&status=running", "")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"total_count":1`)
		code, body = api.do(t, "GET", "/api/v1/sessions?status=archived", "")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"total_count":0`)

		code, body = (restClient{base: api.base}).do(t, "GET", "/api/v1/sessions", "")
		require.Equal(t, http.StatusUnauthorized, code, body)
		require.Contains(t, body, `"error"`)
		code, _ = (restClient{base: api.base, bearer: s.apiKey}).do(t, "GET", "/api/v1/sessions", "")
		require.Equal(t, http.StatusOK, code, "Authorization: Bearer is accepted")

		for _, tt := range []struct {
			body, field string
			status      int // malformed 400; well-formed but refused 422
		}{
			{`{"prompt": `, "malformed JSON", http.StatusBadRequest},
			{`{"title":"x"}`, "git_root", http.StatusUnprocessableEntity}, // prompt is optional since issue 9 (item 9)
			{`{"prompt":"p","git_root":"g","parent_session_id":987654}`, "parent_session_id", http.StatusUnprocessableEntity},
			{fmt.Sprintf(`{"prompt":%q,"git_root":"g"}`, strings.Repeat("x", 500_001)), "prompt", http.StatusUnprocessableEntity},
		} {
			code, body = api.do(t, "POST", "/api/v1/sessions", tt.body)
			require.Equal(t, tt.status, code, body)
			require.Contains(t, body, tt.field)
		}
		code, body = api.do(t, "GET", "/api/v1/sessions/424242", "")
		require.Equal(t, http.StatusNotFound, code, body)
		code, body = api.do(t, "GET", "/api/v1/sessions", "")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"total_count":1`, "refused creates wrote nothing")

		code, body = (restClient{base: api.base}).do(t, "GET", "/openapi.json", "")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "/api/v1/sessions")
	})

	// The harness drives the machine with make run's key (an admin key),
	// and records uncle edges as the queue would: RecordUncleEdge is
	// internal.
	lifecycle := lifecyclev1.NewLifecycleServiceClient(s.dial("lifecycle", s.asAdmin()))
	lineage := lineagev1.NewLineageServiceClient(s.dial("lineage", s.asService("queue")))

	t.Run("gRPC", func(t *testing.T) {
		ctx := context.Background()
		child, err := lifecycle.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "build", GitRoot: "g", ParentSessionId: &parentID})
		require.NoError(t, err)
		require.Equal(t, "api", child.GetSession().GetGenesis())
		got, err := lifecycle.GetSession(ctx, &lifecyclev1.GetSessionRequest{SessionId: fmt.Sprint(child.GetSession().GetId())})
		require.NoError(t, err)
		require.Equal(t, parentID, got.GetSession().GetParentSessionId())
		_, err = lifecycle.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "build"}) // git_root is required; prompt is not (issue 9)
		require.Equal(t, codes.InvalidArgument, status.Code(err))

		// The created event reaches lineage, which records the spawn edge.
		require.Eventually(t, func() bool {
			node, err := lineage.GetSessionNode(ctx, &lineagev1.GetSessionNodeRequest{SessionId: parentID})
			return err == nil && len(node.GetNode().GetSpawnChildIds()) == 1
		}, 20*time.Second, 100*time.Millisecond)
	})

	t.Run("Lineage", func(t *testing.T) {
		ctx := context.Background()
		ids := map[string]int64{}
		for _, slug := range []string{"senior", "junior"} {
			resp, err := lifecycle.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "p", GitRoot: "g", Slug: slug, Title: slug})
			require.NoError(t, err)
			ids[slug] = resp.GetSession().GetId()
		}
		record := func(acting, target int64) lineagev1.UncleEdgeOutcome {
			var out lineagev1.UncleEdgeOutcome
			require.Eventually(t, func() bool { // both nodes must have reached lineage
				resp, err := lineage.RecordUncleEdge(ctx, &lineagev1.RecordUncleEdgeRequest{ActingSessionId: acting, TargetSessionId: target, EntryPoint: "e2e"})
				if err != nil {
					return false
				}
				out = resp.GetOutcome()
				return out != lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_REFUSED_UNKNOWN_SESSION
			}, 20*time.Second, 100*time.Millisecond)
			return out
		}
		require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_WRITTEN, record(ids["senior"], ids["junior"]))
		require.Equal(t, lineagev1.UncleEdgeOutcome_UNCLE_EDGE_OUTCOME_INVERTED, record(ids["junior"], ids["senior"]),
			"the newer act of inspection supersedes the older one")

		code, body := api.do(t, "GET", "/api/v1/sessions/senior", "")
		require.Equal(t, http.StatusOK, code, body)
		var detail struct {
			Session          map[string]any
			SessionHierarchy struct {
				Nodes []struct {
					ID              int64   `json:"id"`
					UncleSessionIDs []int64 `json:"uncle_session_ids"`
					Current         bool    `json:"current"`
				} `json:"nodes"`
			} `json:"session_hierarchy"`
			HumanMessages []any `json:"human_messages"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &detail))
		require.NotNil(t, detail.HumanMessages, "a known-empty record is [], not null")
		var found bool
		for _, n := range detail.SessionHierarchy.Nodes {
			if n.ID == ids["senior"] {
				require.True(t, n.Current)
				require.Equal(t, []int64{ids["junior"]}, n.UncleSessionIDs)
				found = true
			}
		}
		require.True(t, found, body)
	})

	t.Run("Lifecycle", func(t *testing.T) {
		ctx := context.Background()
		code, body := api.do(t, "POST", "/api/v1/sessions", `{"prompt":"p","git_root":"g","slug":"life"}`)
		require.Equal(t, http.StatusCreated, code, body)
		// Starting belongs to the runner, which calls TransitionSession over gRPC.
		_, err := lifecycle.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: "life", Event: "start"})
		require.NoError(t, err)

		code, body = api.do(t, "POST", "/api/v1/sessions/life/pause", `{}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"status":"needs_input"`)
		code, body = api.do(t, "POST", "/api/v1/sessions/life/pause", `{}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		require.Contains(t, body, `"error":"Cannot pause","message":"cannot pause session`)
		code, body = api.do(t, "POST", "/api/v1/sessions/life/sleep", `{}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"status":"waiting"`)

		code, body = api.do(t, "POST", "/api/v1/sessions/life/archive", `{"force":true}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"trash_after"`)
		code, body = api.do(t, "GET", "/api/v1/sessions/life/timeline", "")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, "Session moved to trash by a caller of the REST API")
		code, body = api.do(t, "POST", "/api/v1/sessions/life/unarchive", `{}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"status":"needs_input"`, "the restore lands in needs_input (issue 9, item 13)")
		code, body = api.do(t, "POST", "/api/v1/sessions/life/fail", `{"failure_reason":"operator gave up"}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"failure_reason":"operator gave up"`)
		code, body = api.do(t, "POST", "/api/v1/sessions/life/restart", `{}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"status":"running"`)

		code, body = api.do(t, "PATCH", "/api/v1/sessions/life", `{"title":"Renamed","heartbeat_interval_seconds":120}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"heartbeat_interval_seconds":120`)
		code, body = api.do(t, "PATCH", "/api/v1/sessions/life", `{"heartbeat_interval_seconds":5}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		require.Contains(t, body, "heartbeat_interval_seconds")

		code, body = api.do(t, "GET", "/api/v1/sessions/life/events", "")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"name":"drain_enqueued_messages_after_pause"`)

		code, body = api.do(t, "POST", "/api/v1/sessions/bulk_archive", `{"session_ids":["life","no-such-session"]}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"archived_count":1`)
		require.Contains(t, body, `"session_id":"no-such-session"`)

		code, body = api.do(t, "GET", "/api/v1/settings", "")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"provenance_via_mcp_enabled":true`)

		code, _ = api.do(t, "DELETE", "/api/v1/sessions/life", "")
		require.Equal(t, http.StatusNoContent, code)
		code, _ = api.do(t, "GET", "/api/v1/sessions/life", "")
		require.Equal(t, http.StatusNotFound, code)
	})

	t.Run("MCP", func(t *testing.T) {
		ctx := context.Background()
		c, err := mcpclient.NewStreamableHttpClient("http://"+s.addr["gateway"]+"/mcp",
			transport.WithHTTPHeaders(map[string]string{"X-API-Key": s.apiKey}))
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.Start(ctx))
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		init.Params.ClientInfo = mcp.Implementation{Name: "zimmer-e2e", Version: "1"}
		_, err = c.Initialize(ctx, init)
		require.NoError(t, err)

		tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		require.NoError(t, err)
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
		}
		require.Subset(t, names, []string{"start_session", "get_session"})

		call := mcp.CallToolRequest{}
		call.Params.Name = "get_session"
		call.Params.Arguments = map[string]any{"session_id": "release-router"}
		res, err := c.CallTool(ctx, call)
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res.Content)
		require.Contains(t, text(res), "Release router")
		require.Contains(t, text(res), "waiting")

		call.Params.Name = "start_session"
		call.Params.Arguments = map[string]any{"prompt": "from an agent", "git_root": "g", "parent_session_id": parentID}
		res, err = c.CallTool(ctx, call)
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res.Content)

		created, ok := res.StructuredContent.(map[string]any)
		require.True(t, ok, "structured content: %T", res.StructuredContent)
		agentID := created["session"].(map[string]any)["id"]
		_, err = lifecycle.TransitionSession(ctx, &lifecyclev1.TransitionSessionRequest{SessionId: fmt.Sprint(agentID), Event: "start"})
		require.NoError(t, err)
		call.Params.Name = "action_session"
		call.Params.Arguments = map[string]any{"action": "archive", "session_id": fmt.Sprint(agentID), "acting_session_id": parentID, "force": true}
		res, err = c.CallTool(ctx, call)
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res.Content)
		code, body := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%v/timeline", agentID), "")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, fmt.Sprintf("Session moved to trash by session #%d via the MCP API", parentID))
		call.Params.Name = "get_session"
		call.Params.Arguments = map[string]any{"session_id": fmt.Sprint(agentID), "include_logs": true}
		res, err = c.CallTool(ctx, call)
		require.NoError(t, err)
		require.Contains(t, text(res), "### Timeline")
		require.Contains(t, text(res), "[transition] [State Machine] waiting → running (start)")
		require.Contains(t, text(res), "### Session Hierarchy")
		require.Contains(t, text(res), "### Human Messages")

		call.Params.Name = "action_session"
		call.Params.Arguments = map[string]any{"action": "archive", "session_id": fmt.Sprint(agentID)}
		res, err = c.CallTool(ctx, call)
		require.NoError(t, err)
		require.True(t, res.IsError, "archiving an archived session is refused")
		require.Contains(t, text(res), "it is archived")

		call.Params.Name = "get_session"
		call.Params.Arguments = map[string]any{"session_id": "999999"}
		res, err = c.CallTool(ctx, call)
		require.NoError(t, err)
		require.True(t, res.IsError, "an unknown session is a tool error")
	})

	// Every row of the state machine, through each public surface.
	t.Run("MachineOverREST", func(t *testing.T) { machineOverREST(t, api) })
	t.Run("MachineOverMCP", func(t *testing.T) { machineOverMCP(t, s, api) })

	t.Run("TemporalWorkers", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		tc, err := temporalx.Dial(ctx, s.temporal, s.namespace, slogx.Discard())
		require.NoError(t, err)
		defer tc.Close()
		for _, svc := range services {
			got, err := temporalx.Probe(ctx, tc, svc, fmt.Sprintf("e2e-probe-%s-%d", svc, time.Now().UnixNano()))
			require.NoError(t, err, svc)
			require.Equal(t, svc, got)
		}
	})

	t.Run("EventSurvivesCrashBetweenCommitAndHandOff", func(t *testing.T) {
		ctx := context.Background()
		// Lineage is down: the create commits with its event, which cannot be
		// handed off.
		s.kill("lineage")
		child, err := lifecycle.CreateSession(ctx, &lifecyclev1.CreateSessionRequest{Prompt: "orphan?", GitRoot: "g", ParentSessionId: &parentID})
		require.NoError(t, err)
		childID := child.GetSession().GetId()
		// An unreachable subscriber costs one probe a round (the head of its
		// backlog, which may be an older event), so "tried" is asked of the
		// subscriber's backlog and "undelivered" of the child's event.
		require.Eventually(t, func() bool {
			tried := s.queryInt(t, "lifecycle", `SELECT count(*) FROM outbox_messages WHERE subscriber = 'lineage' AND attempts > 0 AND delivered_at IS NULL`)
			waiting := s.queryInt(t, "lifecycle", `SELECT count(*) FROM outbox_messages WHERE subscriber = 'lineage' AND aggregate_key = $1 AND delivered_at IS NULL`, fmt.Sprint(childID))
			return tried >= 1 && waiting == 1
		}, 20*time.Second, 100*time.Millisecond, "the relay tried and failed, and the child's event waits")
		// Lifecycle dies too, with the event still undelivered.
		s.kill("lifecycle")
		s.start("lineage")
		s.start("lifecycle")
		s.waitHealthy("lineage")
		s.waitHealthy("lifecycle")

		require.Eventually(t, func() bool {
			node, err := lineage.GetSessionNode(ctx, &lineagev1.GetSessionNodeRequest{SessionId: childID})
			return err == nil && node.GetNode().GetSpawnParentId() == parentID
		}, 30*time.Second, 100*time.Millisecond, "the edge arrives after the restart")

		// Force a redelivery of every event: lineage keeps one row per session.
		_, err = s.exec(t, "lifecycle", `UPDATE outbox_messages SET delivered_at = NULL WHERE subscriber = 'lineage'`)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			return s.queryInt(t, "lifecycle", `SELECT count(*) FROM outbox_messages WHERE subscriber = 'lineage' AND delivered_at IS NULL`) == 0
		}, 30*time.Second, 100*time.Millisecond)
		sessions := s.queryInt(t, "lifecycle", `SELECT count(*) FROM sessions`)
		require.Equal(t, sessions, s.queryInt(t, "lineage", `SELECT count(*) FROM session_nodes`), "one node per session")
		require.Equal(t, s.queryInt(t, "lifecycle", `SELECT count(*) FROM outbox_messages WHERE subscriber = 'lineage'`),
			s.queryInt(t, "lineage", `SELECT count(*) FROM inbox_events`), "each event applied once")
		node, err := lineage.GetSessionNode(ctx, &lineagev1.GetSessionNodeRequest{SessionId: parentID})
		require.NoError(t, err)
		require.Len(t, node.GetNode().GetSpawnChildIds(), 3, "REST-, gRPC- and MCP-created children, each once")
	})

	t.Run("CtrlCStopsEveryProcessCleanly", func(t *testing.T) {
		for _, name := range append([]string{"gateway"}, services...) {
			require.NoError(t, s.interrupt(name), "%s exits 0 on SIGINT", name)
		}
	})
}

func (s *stack) queryInt(t *testing.T, svc, q string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.dbURL[svc])
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

func (s *stack) exec(t *testing.T, svc, q string) (int64, error) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.dbURL[svc])
	require.NoError(t, err)
	defer conn.Close(context.Background())
	tag, err := conn.Exec(context.Background(), q)
	return tag.RowsAffected(), err
}

type restClient struct{ base, key, bearer string }

func (c restClient) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("X-API-Key", c.key)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
