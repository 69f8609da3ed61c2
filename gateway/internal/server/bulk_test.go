package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
)

// bulk_archive's session_ids takes ids as JSON numbers, as strings and
// slugs, over REST and MCP; lifecycle receives them as the strings its
// proto takes.
func TestBulkArchiveTakesNumbersAndSlugs(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.fake.Answer("BulkArchiveSessions", &lifecyclev1.BulkArchiveSessionsResponse{ArchivedCount: 3}, nil)

	resp := b.call(t, http.MethodPost, "/api/v1/sessions/bulk_archive", `{"session_ids": [1, "2", "release-router", 40000000000], "force": true}`)
	require.Equal(t, http.StatusOK, resp.status, string(resp.body))
	require.True(t, proto.Equal(&lifecyclev1.BulkArchiveSessionsRequest{SessionIds: []string{"1", "2", "release-router", "40000000000"}, Force: true},
		b.lastRequest(t, "BulkArchiveSessions")), "%v", b.lastRequest(t, "BulkArchiveSessions"))
	require.Equal(t, json.Number("3"), resp.json(t)["archived_count"])

	// What is no id is refused naming session_ids and what it takes.
	before := len(b.fake.Calls())
	for _, body := range []string{`{"session_ids": [0]}`, `{"session_ids": [1.5]}`, `{"session_ids": [{"id": 1}]}`} {
		resp = b.call(t, http.MethodPost, "/api/v1/sessions/bulk_archive", body)
		require.Equal(t, http.StatusUnprocessableEntity, resp.status, "%s: %s", body, resp.body)
		msg, kind, _ := resp.problem(t)
		require.Equal(t, "Validation failed", kind)
		require.Contains(t, msg, "session_ids: takes a list of session ids (positive whole numbers) or slugs", body)
	}
	require.Len(t, b.fake.Calls(), before, "none reached lifecycle")

	c, err := mcpClient(t, b.url+"/mcp", testKey)
	require.NoError(t, err)
	res, err := c.CallTool(t.Context(), callRequest("action_session", map[string]any{
		"action": "bulk_archive", "session_ids": []any{7, "8", "nightly-build"},
	}))
	require.NoError(t, err)
	require.False(t, res.IsError, textOf(res))
	require.True(t, proto.Equal(&lifecyclev1.BulkArchiveSessionsRequest{SessionIds: []string{"7", "8", "nightly-build"}},
		b.lastRequest(t, "BulkArchiveSessions")))

	// The tool's schema says numbers are welcome.
	tools, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
	require.NoError(t, err)
	for _, tool := range tools.Tools {
		if tool.Name == "action_session" {
			items, err := json.Marshal(tool.InputSchema.Properties["session_ids"].(map[string]any)["items"])
			require.NoError(t, err)
			require.JSONEq(t, `{"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string"}]}`, string(items))
		}
	}
}
