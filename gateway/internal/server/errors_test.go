package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// Errors have the original system's shape: error names the kind, message
// explains with what to do, messages lists one entry per problem; a
// well-formed request a rule or the state refuses is 422, a malformed one
// 400. MCP tool errors keep their text.
func TestErrorsHaveTheOriginalsShape(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name         string
		method, path string
		body         string
		rpc          string // the lifecycle method that answers fail
		fail         error
		wantStatus   int
		wantKind     string
		wantMessage  string // the whole message, or its start when it ends in "..."
		wantMessages []string
	}{
		{
			name: "validation", method: http.MethodPost, path: "/api/v1/sessions", body: `{"title": "x"}`, rpc: "CreateSession",
			fail: invalid("prompt", "is required: say what the agent should do",
				"git_root", "is required: the repository the session's clone is made from"),
			wantStatus: http.StatusUnprocessableEntity, wantKind: "Validation failed",
			wantMessage: "prompt: is required: say what the agent should do; git_root: is required: the repository the session's clone is made from",
			wantMessages: []string{"prompt: is required: say what the agent should do",
				"git_root: is required: the repository the session's clone is made from"},
		},
		{
			name: "archive refused", method: http.MethodPost, path: "/api/v1/sessions/1/archive", body: `{}`, rpc: "ArchiveSession",
			fail:       status.Error(codes.FailedPrecondition, "session #1 has 2 queued messages; deliver or delete them, or archive with force"),
			wantStatus: http.StatusUnprocessableEntity, wantKind: "Cannot trash",
			wantMessage: "session #1 has 2 queued messages; deliver or delete them, or archive with force",
		},
		{
			name: "unarchive refused", method: http.MethodPost, path: "/api/v1/sessions/1/unarchive", body: `{}`, rpc: "UnarchiveSession",
			fail:       status.Error(codes.FailedPrecondition, "session #1 is not archived"),
			wantStatus: http.StatusUnprocessableEntity, wantKind: "Cannot restore", wantMessage: "session #1 is not archived",
		},
		{
			name: "pause refused", method: http.MethodPost, path: "/api/v1/sessions/1/pause", body: `{}`, rpc: "PauseSession",
			fail:       status.Error(codes.FailedPrecondition, "cannot pause session 1: it is waiting"),
			wantStatus: http.StatusUnprocessableEntity, wantKind: "Cannot pause", wantMessage: "cannot pause session 1: it is waiting",
		},
		{
			name: "not found", method: http.MethodGet, path: "/api/v1/sessions/9", rpc: "GetSession", fail: notFound("#9"),
			wantStatus: http.StatusNotFound, wantKind: "Not found",
			wantMessage: "session #9 not found; check the id or slug (GET /api/v1/sessions lists sessions)",
		},
		{
			name: "not found through grpc-gateway", method: http.MethodPost, path: "/api/v1/sessions/9/pause", body: `{}`,
			rpc: "PauseSession", fail: notFound("#9"),
			wantStatus: http.StatusNotFound, wantKind: "Not found",
			wantMessage: "session #9 not found; check the id or slug (GET /api/v1/sessions lists sessions)",
		},
		{
			name: "malformed JSON", method: http.MethodPost, path: "/api/v1/sessions", body: `{"prompt": `,
			wantStatus: http.StatusBadRequest, wantKind: "Malformed JSON", wantMessage: "malformed JSON body: ...",
		},
		{
			name: "a parameter that cannot be read", method: http.MethodGet, path: "/api/v1/sessions?per_page=many",
			wantStatus: http.StatusBadRequest, wantKind: "Bad request", wantMessage: `parsing field "per_page": ...`,
		},
		{
			name: "no route", method: http.MethodGet, path: "/api/v1/nope",
			wantStatus: http.StatusNotFound, wantKind: "Not found", wantMessage: "no route GET /api/v1/nope; see /openapi.json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{})
			if tt.rpc != "" {
				b.fake.Answer(tt.rpc, nil, tt.fail)
			}
			resp := b.call(t, tt.method, tt.path, tt.body)
			require.Equal(t, tt.wantStatus, resp.status, string(resp.body))
			message, kind, messages := resp.problem(t)
			require.Equal(t, tt.wantKind, kind)
			if start, ok := strings.CutSuffix(tt.wantMessage, "..."); ok {
				require.True(t, strings.HasPrefix(message, start), message)
			} else {
				require.Equal(t, tt.wantMessage, message)
			}
			want := tt.wantMessages
			if want == nil {
				want = []string{message}
			}
			require.Equal(t, want, messages)
		})
	}
}

func TestMCPToolErrorsKeepTheirText(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.fake.Answer("CreateSession", nil, invalid("git_root", "is required: the repository the session's clone is made from"))
	b.fake.Answer("ArchiveSession", nil, status.Error(codes.FailedPrecondition, "session #1 has 2 queued messages; deliver or delete them, or archive with force"))
	c, err := mcpClient(t, b.url+"/mcp", testKey)
	require.NoError(t, err)

	res, err := c.CallTool(t.Context(), callRequest("start_session", map[string]any{"prompt": "p", "git_root": "/g"}))
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, "git_root: is required: the repository the session's clone is made from", textOf(res))

	res, err = c.CallTool(t.Context(), callRequest("action_session", map[string]any{"action": "archive", "session_id": "1"}))
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, "session #1 has 2 queued messages; deliver or delete them, or archive with force", textOf(res))
	require.IsType(t, &lifecyclev1.ArchiveSessionRequest{}, b.lastRequest(t, "ArchiveSession"))
}
