package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A path or query parameter that is not UTF-8 (%FF, or %ED%A0%80, an
// encoded surrogate) or holds a NUL is the caller's error: 400 naming the
// parameter, never a 500 from the marshaller, and nothing reaches a
// service.
func TestBadTextInParametersIsRefusedNamingTheParameter(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, provenanceOpts{})

	tests := []struct {
		method, path string
		wantNamed    string
		wantWhat     string
	}{
		{http.MethodGet, "/api/v1/sessions/%FF", `path parameter "session_id"`, "not valid UTF-8"},
		{http.MethodGet, "/api/v1/sessions/%ED%A0%80", `path parameter "session_id"`, "not valid UTF-8"},
		{http.MethodGet, "/api/v1/sessions/ab%00c", `path parameter "session_id"`, "NUL"},
		{http.MethodPost, "/api/v1/sessions/%FF/archive", `path parameter "session_id"`, "not valid UTF-8"},
		{http.MethodPost, "/api/v1/sessions/%ED%A0%80/pause", `path parameter "session_id"`, "not valid UTF-8"},
		{http.MethodPatch, "/api/v1/sessions/a%00/heartbeat", `path parameter "session_id"`, "NUL"},
		{http.MethodGet, "/api/v1/sessions/%FF/timeline", `path parameter "session_id"`, "not valid UTF-8"},
		{http.MethodGet, "/api/v1/sessions?q=%FF", `query parameter "q"`, "not valid UTF-8"},
		{http.MethodGet, "/api/v1/sessions?q=%ED%A0%80", `query parameter "q"`, "not valid UTF-8"},
		{http.MethodGet, "/api/v1/sessions?q=a%00b", `query parameter "q"`, "NUL"},
		{http.MethodGet, "/api/v1/sessions?status=waiting&status=%FF", `query parameter "status"`, "not valid UTF-8"},
		{http.MethodGet, "/api/v1/sessions?agent_root=%00", `query parameter "agent_root"`, "NUL"},
		{http.MethodGet, "/api/v1/sessions?%FF=1", `query parameter name "\xff"`, "not valid UTF-8"},
	}
	for _, tt := range tests {
		body := ""
		if tt.method != http.MethodGet {
			body = "{}"
		}
		resp := b.call(t, tt.method, tt.path, body)
		require.Equal(t, http.StatusBadRequest, resp.status, "%s %s: %s", tt.method, tt.path, resp.body)
		msg, kind, _ := resp.problem(t)
		require.Equal(t, "Bad request", kind)
		require.Contains(t, msg, tt.wantNamed, tt.path)
		require.Contains(t, msg, tt.wantWhat, tt.path)
	}
	require.Empty(t, b.fake.Calls(), "nothing reached lifecycle")

	resp := b.supervise(t, http.MethodPatch, "/supervisor/users/%FF", `{"notes": "x"}`)
	require.Equal(t, http.StatusBadRequest, resp.status, string(resp.body))
	require.Contains(t, resp.errorText(t), `path parameter "key" is not valid UTF-8`)
	require.Empty(t, b.lineage.Calls("UpdateUser"))

	// MCP: a session reference holding a NUL is refused before any call.
	c, err := mcpClient(t, b.url+"/mcp", testKey)
	require.NoError(t, err)
	res, err := c.CallTool(t.Context(), callRequest("get_session", map[string]any{"session_id": "a\x00b"}))
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), "session_id contains a NUL character")
	res, err = c.CallTool(t.Context(), callRequest("action_session", map[string]any{"action": "bulk_archive", "session_ids": []any{"1", "x\x00"}}))
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), "session_ids contains a NUL character")
	require.Empty(t, b.fake.Calls(), "nothing reached lifecycle")
}

// No text gRPC itself wrote reaches a REST or MCP caller: a message over
// the size limit, a transport failure, a credentials failure are worded by
// the gateway.
func TestGRPCTextNeverReachesACaller(t *testing.T) {
	t.Parallel()

	for _, fail := range []error{
		status.Error(codes.ResourceExhausted, "grpc: received message larger than max (5242880 vs. 4194304)"),
		status.Error(codes.ResourceExhausted, "grpc: trying to send message larger than max (5242880 vs. 4194304)"),
		status.Error(codes.Unauthenticated, "transport: per-RPC creds failed due to error: boom"),
		status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:9101: connect: connection refused\""),
		status.Error(codes.Internal, "grpc: error while marshaling: string field contains invalid UTF-8"),
		status.Error(codes.InvalidArgument, "grpc: error unmarshalling request: unexpected EOF"),
		status.Error(codes.Aborted, "rpc error: code = Aborted desc = stream reset"),
	} {
		b := setup(t, setupOpts{})
		b.fake.FailWith(fail)
		for _, path := range []string{"/api/v1/sessions", "/api/v1/sessions/1", "/api/v1/sessions/1/timeline"} {
			resp := b.call(t, http.MethodGet, path, "")
			require.GreaterOrEqual(t, resp.status, 400, string(resp.body))
			msg, _, messages := resp.problem(t)
			for _, text := range append(messages, msg) {
				requireNoGRPCText(t, text)
			}
		}
		c, err := mcpClient(t, b.url+"/mcp", testKey)
		require.NoError(t, err)
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"get_session", map[string]any{"session_id": "1"}},
			{"start_session", map[string]any{"prompt": "p", "git_root": "/g"}},
			{"action_session", map[string]any{"action": "pause", "session_id": "1"}},
		} {
			res, err := c.CallTool(t.Context(), callRequest(call.tool, call.args))
			require.NoError(t, err)
			require.True(t, res.IsError)
			requireNoGRPCText(t, textOf(res))
		}
	}
}

func requireNoGRPCText(t *testing.T, text string) {
	t.Helper()
	require.NotEmpty(t, text)
	for _, leak := range []string{"grpc:", "transport:", "desc =", "rpc error", "larger than max", "creds"} {
		require.NotContains(t, text, leak)
	}
	require.False(t, strings.HasPrefix(text, "connection error"), text)
}
