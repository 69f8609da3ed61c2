package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// refused reports whether code is a refusal of the caller's input: 400 for
// a body that is not the request's shape, 422 for one the rules refuse
// (and 413 for a body over the gateway's size limit). Never a 5xx, and
// never 429, which is how a transport limit used to leak out.
func refused(code int) bool {
	return code == http.StatusBadRequest || code == http.StatusUnprocessableEntity || code == http.StatusRequestEntityTooLarge
}

// lifecycleDB is a connection to lifecycle's database, to see what a
// refused request did not write.
type lifecycleDB struct{ conn *pgx.Conn }

func openLifecycleDB(t *testing.T, s *stack) lifecycleDB {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.dbURL["lifecycle"])
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return lifecycleDB{conn: conn}
}

func (db lifecycleDB) int(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.conn.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

func (db lifecycleDB) sessions(t *testing.T) int64 {
	return db.int(t, `SELECT count(*) FROM sessions`)
}

// state is what every write to a session changes: its version and its
// timeline (each is written in the same batch as the rest).
func (db lifecycleDB) state(t *testing.T, id int64) [2]int64 {
	t.Helper()
	return [2]int64{
		db.int(t, `SELECT version FROM sessions WHERE id = $1`, id),
		db.int(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1`, id),
	}
}

// nestedJSON is an object nesting levels objects deep: {"n":{"n":…{}…}}.
func nestedJSON(levels int) string {
	return strings.Repeat(`{"n":`, levels-1) + "{}" + strings.Repeat("}", levels-1)
}

// wide is n characters that are 4 bytes each in UTF-8.
func wide(n int) string { return strings.Repeat("𝄞", n) }

// TestBadInputIsRefusedWhole drives issue 9's findings over REST and MCP on
// the real binaries: bad input answers a refusal naming the field and writes
// nothing; big valid sessions and the rows they leave never break a read;
// the restore and the archive lines behave as the original's did. Then it
// fuzzes the create and patch bodies (fuzz_test.go), and every route,
// path and query id, body field and MCP tool argument
// (fuzz_surface_test.go).
func TestBadInputIsRefusedWhole(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	db := openLifecycleDB(t, s)

	t.Run("DeepNesting", func(t *testing.T) {
		before := db.sessions(t)
		for _, levels := range []int{rules.MaxMetadataDepth + 1, 100, 3_333, 6_000, 40_000} {
			code, body := api.do(t, "POST", "/api/v1/sessions", `{"prompt":"p","git_root":"g","custom_metadata":`+nestedJSON(levels)+`}`)
			require.True(t, refused(code), "%d levels: %d %s", levels, code, body)
			if levels <= 3_333 { // beyond, the gateway may refuse the body before lifecycle sees it
				require.Contains(t, body, "custom_metadata", "%d levels", levels)
			}
		}
		code, body := api.do(t, "POST", "/api/v1/sessions", `{"prompt":"p","git_root":"g","custom_metadata":`+nestedJSON(rules.MaxMetadataDepth)+`}`)
		require.Equal(t, http.StatusCreated, code, "the documented depth is allowed: %s", body)
		require.Equal(t, before+1, db.sessions(t), "only the allowed one was written")

		id := createREST(t, api, `{"prompt":"p","git_root":"g","custom_metadata":{"kept":true}}`)
		for _, levels := range []int{rules.MaxMetadataDepth + 1, 3_333} {
			st := db.state(t, id)
			code, body := api.do(t, "PATCH", fmt.Sprintf("/api/v1/sessions/%d", id), `{"custom_metadata":`+nestedJSON(levels)+`}`)
			require.True(t, refused(code), "%d %s", code, body)
			require.Equal(t, st, db.state(t, id), "a refused patch writes nothing")
		}

		mcp := mcpConnect(t, s, "?tool_groups=sessions")
		before = db.sessions(t)
		for _, levels := range []int{rules.MaxMetadataDepth + 1, 3_333, 9_000} {
			var deep any = map[string]any{}
			for range levels - 1 {
				deep = map[string]any{"n": deep}
			}
			res := callTool(t, mcp, "start_session", map[string]any{"prompt": "p", "git_root": "g", "custom_metadata": deep})
			require.True(t, res.IsError, "%d levels: %s", levels, text(res))
			require.Contains(t, text(res), "custom_metadata", "%d levels", levels)
		}
		require.Equal(t, before, db.sessions(t), "MCP wrote nothing either")

		code, body = api.do(t, "GET", "/api/v1/sessions?per_page=100", "")
		require.Equal(t, http.StatusOK, code, "every page still reads: %s", body)
	})

	t.Run("LargeValidSessionsAndLimits", func(t *testing.T) {
		filler := strings.Repeat("m", rules.MaxMetadataBytes-1024)
		var ids []int64
		for i := range 2 {
			body := fmt.Sprintf(`{"prompt":%q,"goal":%q,"title":%q,"git_root":%q,"branch":%q,"subdirectory":%q,"agent_root":%q,"agent_runtime":%q,"slug":"large-%d","custom_metadata":{"n":%q}}`,
				wide(rules.MaxPromptChars), wide(rules.MaxGoalChars), wide(rules.MaxTitleChars), wide(rules.MaxGitRootChars),
				// agent_runtime is a runtime's name or nothing (issue 20 item 9).
				wide(rules.MaxBranchChars), wide(rules.MaxSubdirectoryChars), wide(rules.MaxAgentRootChars), rules.RuntimeClaudeCode, i, filler)
			ids = append(ids, createREST(t, api, body))
			code, resp := api.do(t, "PATCH", fmt.Sprintf("/api/v1/sessions/large-%d", i), fmt.Sprintf(`{"notes":%q}`, wide(rules.MaxNotesChars)))
			require.Equal(t, http.StatusOK, code, resp)
		}
		code, body := api.do(t, "GET", "/api/v1/sessions?per_page=100", "")
		require.Equal(t, http.StatusOK, code, "two of the largest sessions never break the list: %.300s", body)
		require.Less(t, len(body), 1<<20, "a list carries previews, not whole prompts")
		var page struct{ Sessions []map[string]any }
		require.NoError(t, json.Unmarshal([]byte(body), &page))
		for _, sess := range page.Sessions {
			require.LessOrEqual(t, len([]rune(sess["prompt"].(string))), rules.ListPreviewChars+1)
		}
		got := getSession(t, api, ids[0])
		require.Equal(t, wide(rules.MaxPromptChars), got["prompt"], "GET /sessions/{id} has the whole prompt")

		before := db.sessions(t)
		for field, limit := range map[string]int{
			"git_root": rules.MaxGitRootChars, "branch": rules.MaxBranchChars, "subdirectory": rules.MaxSubdirectoryChars,
			"title": rules.MaxTitleChars, "agent_root": rules.MaxAgentRootChars, "agent_runtime": rules.MaxAgentRuntimeChars,
			"goal": rules.MaxGoalChars, "prompt": rules.MaxPromptChars,
		} {
			body := map[string]any{"prompt": "p", "git_root": "g", field: strings.Repeat("a", limit+1)}
			raw, err := json.Marshal(body)
			require.NoError(t, err)
			code, resp := api.do(t, "POST", "/api/v1/sessions", string(raw))
			require.True(t, refused(code), "%s: %d %s", field, code, resp)
			require.Contains(t, resp, field)
		}
		code, resp := api.do(t, "POST", "/api/v1/sessions", fmt.Sprintf(`{"git_root":"g","prompt":%q}`, strings.Repeat("p", 7<<20)))
		require.True(t, refused(code), "a body over gRPC's default message size: %d %.300s", code, resp)
		require.Contains(t, resp, "prompt", "refused by lifecycle, naming the field, not by the transport")
		require.NotContains(t, resp, "grpc")
		require.Equal(t, before, db.sessions(t))
	})

	t.Run("NULAndInvalidUTF8", func(t *testing.T) {
		before := db.sessions(t)
		for _, field := range []string{"prompt", "git_root", "branch", "subdirectory", "title", "goal", "agent_root", "agent_runtime"} {
			for _, bad := range []string{`"a\u0000b"`, "\"a\xffb\"", `"\ud800"`} {
				body := fmt.Sprintf(`{"git_root":"g",%q:%s}`, field, bad)
				if field != "prompt" {
					body = fmt.Sprintf(`{"prompt":"p","git_root":"g",%q:%s}`, field, bad)
				}
				code, resp := api.do(t, "POST", "/api/v1/sessions", body)
				require.True(t, refused(code), "%s=%s: %d %s", field, bad, code, resp)
				if bad == `"a\u0000b"` {
					require.Contains(t, resp, field)
				}
			}
		}
		for _, md := range []string{`{"k\u0000":1}`, `{"k":"\u0000"}`, `{"k":[{"x":"\u0000"}]}`, "{\"k\xff\":1}"} {
			code, resp := api.do(t, "POST", "/api/v1/sessions", `{"prompt":"p","git_root":"g","custom_metadata":`+md+`}`)
			require.True(t, refused(code), "%s: %d %s", md, code, resp)
		}
		require.Equal(t, before, db.sessions(t))

		id := createREST(t, api, `{"prompt":"p","git_root":"g","slug":"nul-target"}`)
		for _, body := range []string{`{"title":"\u0000"}`, `{"notes":"x\u0000"}`, `{"goal":"\u0000"}`, `{"custom_metadata":{"\u0000":1}}`, "{\"notes\":\"\xc3\"}"} {
			st := db.state(t, id)
			code, resp := api.do(t, "PATCH", "/api/v1/sessions/nul-target", body)
			require.True(t, refused(code), "%s: %d %s", body, code, resp)
			require.Equal(t, st, db.state(t, id))
		}
		for _, path := range []string{"/api/v1/sessions/%00", "/api/v1/sessions/a%00b", "/api/v1/sessions/%FF", "/api/v1/sessions/%ED%A0%80",
			"/api/v1/sessions?q=%00", "/api/v1/sessions?q=%FF", "/api/v1/sessions?agent_root=%00", "/api/v1/sessions?genesis=%ED%A0%80",
			"/api/v1/sessions/%00/timeline", "/api/v1/sessions/%FF/events"} {
			code, resp := api.do(t, "GET", path, "")
			require.True(t, refused(code) || code == http.StatusNotFound, "%s: %d %s", path, code, resp)
		}
		code, resp := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/fail", id), `{"failure_reason":"a\u0000"}`)
		require.True(t, refused(code), "%d %s", code, resp)
		require.Contains(t, resp, "failure_reason")
	})

	t.Run("GitRootAndPrompt", func(t *testing.T) {
		before := db.sessions(t)
		for _, body := range []string{`{"prompt":"p","git_root":"   "}`, `{"prompt":"p","git_root":"\t\n"}`, `{"prompt":"p"}`, `{"prompt":"p","git_root":""}`} {
			code, resp := api.do(t, "POST", "/api/v1/sessions", body)
			require.True(t, refused(code), "%s: %d %s", body, code, resp)
			require.Contains(t, resp, "git_root")
		}
		require.Equal(t, before, db.sessions(t))
		id := createREST(t, api, `{"git_root":"git@example.com:acme/app.git"}`)
		require.Equal(t, "waiting", getSession(t, api, id)["status"], "a session without a prompt waits for its first message")

		mcp := mcpConnect(t, s, "?tool_groups=sessions")
		sess := toolSession(t, callTool(t, mcp, "start_session", map[string]any{"git_root": "g"}))
		require.Equal(t, "waiting", sess["status"])
		res := callTool(t, mcp, "start_session", map[string]any{"prompt": "p", "git_root": "  "})
		require.True(t, res.IsError)
		require.Contains(t, text(res), "git_root")
	})

	t.Run("SchedulingClassInherited", func(t *testing.T) {
		parent := createREST(t, api, `{"prompt":"p","git_root":"g","scheduling_class":"spot"}`)
		child := createREST(t, api, fmt.Sprintf(`{"prompt":"p","git_root":"g","parent_session_id":%d}`, parent))
		require.Equal(t, "spot", getSession(t, api, child)["scheduling_class"])
		chosen := createREST(t, api, fmt.Sprintf(`{"prompt":"p","git_root":"g","parent_session_id":%d,"scheduling_class":"priority"}`, parent))
		require.Equal(t, "priority", getSession(t, api, chosen)["scheduling_class"])
	})

	t.Run("UnarchiveIsTheRestore", func(t *testing.T) {
		id := createREST(t, api, `{"prompt":"p","git_root":"g"}`)
		code, resp := api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/archive", id), `{"force":true}`)
		require.Equal(t, http.StatusOK, code, resp)
		code, resp = api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/unarchive", id), `{}`)
		require.Equal(t, http.StatusOK, code, resp)
		require.Contains(t, resp, `"status":"needs_input"`, "archived from waiting, restored to needs_input")

		mcp := mcpConnect(t, s, "?tool_groups=sessions")
		code, resp = api.do(t, "POST", fmt.Sprintf("/api/v1/sessions/%d/fail", id), `{"failure_reason":"e2e"}`)
		require.Equal(t, http.StatusOK, code, resp)
		require.Equal(t, "archived", toolSession(t, callTool(t, mcp, "action_session", map[string]any{"action": "archive", "session_id": id, "force": true}))["status"])
		sess := toolSession(t, callTool(t, mcp, "action_session", map[string]any{"action": "unarchive", "session_id": id}))
		require.Equal(t, "needs_input", sess["status"], "archived from failed, restored to needs_input")
	})

	t.Run("ArchiveLines", func(t *testing.T) {
		acting := createREST(t, api, `{"prompt":"p","git_root":"g","title":"the harness"}`)
		rest := createREST(t, api, `{"prompt":"p","git_root":"g"}`)
		code, resp := api.do(t, "POST", "/api/v1/sessions/bulk_archive", fmt.Sprintf(`{"session_ids":["%d"],"force":true}`, rest))
		require.Equal(t, http.StatusOK, code, resp)
		require.Equal(t, "[State Machine] Session moved to trash by a caller of the REST API (bulk)"+adminSuffix(s.apiKey), last(timeline(t, api, rest, "transition")))

		mcp := mcpConnect(t, s, "?tool_groups=sessions")
		viaMCP := createREST(t, api, `{"prompt":"p","git_root":"g"}`)
		res := callTool(t, mcp, "action_session", map[string]any{"action": "bulk_archive", "session_ids": []any{fmt.Sprint(viaMCP)}, "acting_session_id": acting, "force": true})
		require.False(t, res.IsError, text(res))
		require.Equal(t, fmt.Sprintf("[State Machine] Session moved to trash by session #%d via the MCP API (bulk)", acting)+adminSuffix(s.apiKey), last(timeline(t, api, viaMCP, "transition")))

		self := mcpConnect(t, s, "?tool_groups=self_session")
		undeclared := createREST(t, api, `{"prompt":"p","git_root":"g"}`)
		require.Equal(t, "archived", toolSession(t, callTool(t, self, "action_session", map[string]any{"action": "archive", "session_id": undeclared, "force": true}))["status"])
		require.Equal(t, "[State Machine] Session moved to trash by an undeclared caller via the self-session MCP server"+adminSuffix(s.apiKey), last(timeline(t, api, undeclared, "transition")))
	})

	t.Run("FuzzBodies", func(t *testing.T) { fuzzBodies(t, api, db) })
	t.Run("FuzzSurface", func(t *testing.T) { fuzzSurface(t, s, api) })
}

func last(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}
