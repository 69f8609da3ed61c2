package server_test

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// The gateway's gRPC clients take answers as large as the services send
// (grpcserver.MaxMessageBytes, through grpcclient.Dial), not gRPC's default
// 4 MiB: a session answer of about 5 MB reaches REST and MCP whole.
func TestAnswersLargerThanGRPCsDefaultReachTheCaller(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	prompt := strings.Repeat("😀", rules.MaxPromptChars) // 4 bytes each: 2 MB
	notes := strings.Repeat("𝄞", rules.MaxPromptChars)  // 2 MB more
	goal := strings.Repeat("€", rules.MaxPromptChars)   // 1.5 MB more
	b.fake.Answer("GetSession", &lifecyclev1.GetSessionResponse{Session: &lifecyclev1.Session{
		Id: 1, Status: "waiting", Prompt: prompt, Notes: notes, Goal: goal,
	}}, nil)

	resp := b.call(t, http.MethodGet, "/api/v1/sessions/1", "")
	require.Equal(t, http.StatusOK, resp.status, "%.300s", resp.body)
	s := resp.json(t)["session"].(map[string]any)
	require.Equal(t, rules.MaxPromptChars, utf8.RuneCountInString(s["prompt"].(string)))
	require.Equal(t, notes, s["notes"])

	c, err := mcpClient(t, b.url+"/mcp", testKey)
	require.NoError(t, err)
	res, err := c.CallTool(t.Context(), callRequest("get_session", map[string]any{"session_id": "1"}))
	require.NoError(t, err)
	require.False(t, res.IsError, "%.300s", textOf(res))
	require.Contains(t, textOf(res), goal)
}
