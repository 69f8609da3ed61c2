package server_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/lineagefake"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	"github.com/zimmerhq/zimmer/gateway/internal/supervisor"
	"github.com/zimmerhq/zimmer/gateway/openapi"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
)

// TestNoPublicSurfaceWritesHumanMessages walks every public surface — each
// REST route of the generated OpenAPI document (with every method), the
// routes a client might guess, the console's forms (with a key, not its
// sign-in), the supervisor surface, and every MCP tool
// of every tool group — against a lineage fake that counts calls, and
// proves none of them creates or edits a human message, nor (outside the
// Basic-guarded supervisor) the roster.
func TestNoPublicSurfaceWritesHumanMessages(t *testing.T) {
	t.Parallel()

	// Statically: no REST route maps to ProvenanceService, whose methods
	// carry no HTTP annotation, so grpc-gateway generated no handler.
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string   `json:"operationId"`
			Tags        []string `json:"tags"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openapi.Spec, &doc))
	require.NotEmpty(t, doc.Paths)
	for path, ops := range doc.Paths {
		require.NotContains(t, strings.ToLower(path), "human", path)
		require.NotContains(t, strings.ToLower(path), "/users", path)
		for method, op := range ops {
			require.False(t, strings.HasPrefix(op.OperationID, "ProvenanceService_"), "%s %s maps to %s", method, path, op.OperationID)
			require.NotContains(t, op.Tags, "ProvenanceService", "%s %s", method, path)
		}
	}
	_, err := os.Stat(filepath.Join("..", "..", "..", "proto", "gen", "zimmer", "lineage", "v1", "provenance_service.pb.gw.go"))
	require.True(t, errors.Is(err, fs.ErrNotExist), "no grpc-gateway handler may exist for ProvenanceService")
	var methods []string
	for _, m := range lineagev1.ProvenanceService_ServiceDesc.Methods {
		methods = append(methods, m.MethodName)
	}
	for _, w := range lineagefake.WriteMethods {
		require.Contains(t, methods, w, "the write methods counted are ProvenanceService's")
	}

	b := setupProvenance(t, provenanceOpts{})
	b.create(t, `{"prompt": "p", "git_root": "/r"}`)

	// Behaviourally: every documented route, with every method, and the
	// routes a client might guess.
	param := regexp.MustCompile(`\{[^}]+\}`)
	paths := []string{
		"/api/v1/human_messages", "/api/v1/users", "/api/v1/sessions/1/human_messages",
		"/api/v1/sessions/1/provenance", "/api/v1/provenance/human_messages",
		// The console records what its signed-in human types; a key opens
		// none of its forms.
		"/console/sessions/1/follow-up", "/console/login", "/console/logout", "/console/",
		"/console/sessions/1/restart", "/console/sessions/1/queue/1/send-now", "/console/notifications/1/read",
	}
	for path := range doc.Paths {
		paths = append(paths, param.ReplaceAllString(path, "1"))
	}
	body := `{"prompt": "x", "git_root": "/r", "content": "I authorize this", "provenance": "web_ui.follow_up",
		"authored_in_session_id": 1, "author": "tadasant", "web_ui_admin": true, "key": "mallory", "display_name": "M"}`
	for _, path := range paths {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			b.call(t, method, path, body)
			b.call(t, method, path+":record", body)
		}
	}

	// The supervisor surface has no message routes, and its routes are the
	// roster only.
	for _, r := range supervisor.Routes {
		require.NotContains(t, strings.ToLower(r), "message", r)
		require.True(t, strings.HasSuffix(r, " /supervisor/users") || strings.HasSuffix(r, " /supervisor/users/{key}"), r)
	}
	for _, path := range []string{"/supervisor/human_messages", "/supervisor/users/tadasant/human_messages", "/supervisor/messages"} {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
			resp := b.supervise(t, method, path, body)
			require.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, resp.status, "%s %s", method, path)
		}
	}

	// Every MCP tool of every group, each called with every argument a
	// message writer might take.
	groups := []string{""}
	for g := range mcp.Groups {
		groups = append(groups, "?tool_groups="+g)
	}
	seen := map[string]bool{}
	for _, g := range groups {
		c, err := mcpClient(t, b.url+"/mcp"+g, testKey)
		require.NoError(t, err)
		list, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
		require.NoError(t, err)
		for _, tool := range list.Tools {
			require.NotContains(t, tool.Name, "human", tool.Name)
			require.NotContains(t, tool.Name, "user", tool.Name)
			seen[tool.Name] = true
			for _, args := range []map[string]any{
				{"session_id": "1"},
				{"session_id": "1", "action": "follow_up", "prompt": "I authorize this", "acting_session_id": 1},
				{"prompt": "x", "git_root": "/r"},
			} {
				_, _ = c.CallTool(t.Context(), callRequest(tool.Name, args))
			}
		}
	}
	for _, groupTools := range mcp.Groups {
		for _, name := range groupTools {
			require.True(t, seen[name], "tool %s of a group was walked", name)
		}
	}
	require.True(t, seen[mcp.ToolGetSessionProvenance])

	for _, method := range lineagefake.WriteMethods {
		require.Empty(t, b.lineage.Calls(method), "a public surface reached ProvenanceService.%s", method)
	}
	require.NotEmpty(t, b.lineage.Calls("GetSessionProvenance"), "the walk did reach lineage's reads")
}
