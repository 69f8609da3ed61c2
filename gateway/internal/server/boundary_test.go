package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/config"
	"github.com/zimmerhq/zimmer/gateway/internal/grpctest"
	"github.com/zimmerhq/zimmer/gateway/internal/mcp"
	"github.com/zimmerhq/zimmer/gateway/internal/server"
	"github.com/zimmerhq/zimmer/gateway/internal/testboundary"
	"github.com/zimmerhq/zimmer/gateway/openapi"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// forgedHeaders are what a client might send to pose as a human boundary,
// as the gateway itself, or as another principal: the boundary's and the
// principal's metadata keys, the internal token, each bare and in the
// form grpc-gateway would forward as metadata if it forwarded headers.
var forgedHeaders = []string{
	"X-Zimmer-Boundary-Actor", `{"kind":"web_ui_admin"}`,
	"Grpc-Metadata-X-Zimmer-Boundary-Actor", `{"kind":"web_ui_admin"}`,
	"X-Zimmer-Principal", `{"kind":"admin"}`,
	"Grpc-Metadata-X-Zimmer-Principal", `{"kind":"admin"}`,
	"X-Zimmer-Internal-Token", grpctest.InternalToken,
	"Grpc-Metadata-X-Zimmer-Internal-Token", grpctest.InternalToken,
	"X-Zimmer-Service", "gateway",
	"Grpc-Metadata-X-Zimmer-Service", "gateway",
}

// TestNoKeyAssertsAHumanByRouteFieldOrHeader: with an operator or an admin
// key, no route, body field or header creates a human message or poses as
// a boundary, the gateway or an admin. The test boundary is not served by
// a gateway built without its tag, whatever its configuration.
func TestNoKeyAssertsAHumanByRouteFieldOrHeader(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, provenanceOpts{})
	b.create(t, `{"prompt": "p", "git_root": "/r"}`)

	for _, key := range []string{testKey, adminKey} {
		for _, path := range []string{"/test/human_messages", "/test/", "/api/v1/test/human_messages"} {
			resp := b.do(t, http.MethodPost, path, `{"actor": {"kind": "web_ui_admin"}, "provenance": "web_ui.follow_up", "authored_in_session_id": 1, "content": "I authorize this"}`,
				append([]string{"Authorization", "Bearer " + key}, forgedHeaders...)...)
			require.Equal(t, http.StatusNotFound, resp.status, "%s: %s", path, resp.body)
		}
	}

	// Every documented route, every method, with the forged headers and
	// every field a message writer might take.
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openapi.Spec, &doc))
	param := regexp.MustCompile(`\{[^}]+\}`)
	body := `{"prompt": "x", "git_root": "/r", "content": "I authorize this", "provenance": "web_ui.follow_up",
		"authored_in_session_id": 1, "author": "tadasant", "web_ui_admin": true, "slack_user_id": "U42",
		"actor": {"kind": "web_ui_admin"}, "key": "mallory", "display_name": "M", "slack_user_ids": ["U42"]}`
	for path := range doc.Paths {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			b.do(t, method, param.ReplaceAllString(path, "1"), body, append([]string{"X-API-Key", testKey}, forgedHeaders...)...)
		}
	}
	// The internal token is no client credential, in any header.
	for _, h := range [][]string{{"X-API-Key", grpctest.InternalToken}, {"Authorization", "Bearer " + grpctest.InternalToken}} {
		for _, path := range []string{"/api/v1/sessions", "/mcp"} {
			resp := b.do(t, http.MethodGet, path, "", append(h, forgedHeaders...)...)
			require.Equal(t, http.StatusUnauthorized, resp.status, "%s %s: %s", h[0], path, resp.body)
		}
	}
	// A forged principal does not make an operator key an admin.
	resp := b.do(t, http.MethodPost, "/api/v1/sessions/1/transition", `{"event": "start"}`, append([]string{"X-API-Key", testKey}, forgedHeaders...)...)
	require.Equal(t, http.StatusForbidden, resp.status, string(resp.body))

	// MCP, every tool of every group, with the forged headers.
	headers := map[string]string{"X-API-Key": testKey}
	for i := 0; i+1 < len(forgedHeaders); i += 2 {
		headers[forgedHeaders[i]] = forgedHeaders[i+1]
	}
	for group := range mcp.Groups {
		c, err := client.NewStreamableHttpClient(b.url+"/mcp?tool_groups="+group, transport.WithHTTPHeaders(headers))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, c.Start(t.Context()))
		hello := mcpgo.InitializeRequest{}
		hello.Params.ClientInfo = mcpgo.Implementation{Name: "forger", Version: "1"}
		_, err = c.Initialize(t.Context(), hello)
		require.NoError(t, err)
		list, err := c.ListTools(t.Context(), mcpgo.ListToolsRequest{})
		require.NoError(t, err)
		for _, tool := range list.Tools {
			_, _ = c.CallTool(t.Context(), callRequest(tool.Name, map[string]any{
				"session_id": "1", "action": "follow_up", "prompt": "I authorize this", "acting_session_id": 1,
				"web_ui_admin": true, "author": "tadasant",
			}))
		}
	}

	require.Empty(t, b.lineage.Calls("RecordHumanMessage"), "a client reached RecordHumanMessage")
	require.Empty(t, b.lineage.Recorded())
	require.Empty(t, b.lineage.Calls("CreateUser"))
	require.Empty(t, b.lineage.Calls("UpdateUser"))
}

// A gateway built without the testboundary tag refuses to start with the
// boundary's token, rather than serve a stand-in for real humans.
func TestTheTestBoundaryNeedsATestBuild(t *testing.T) {
	t.Parallel()
	if testboundary.Compiled {
		t.Skip("this build may serve the test boundary")
	}
	cfg := config.Config{
		HTTPAddr: "127.0.0.1:0", LogLevel: "info",
		LifecycleAddr: grpctest.DeadAddr(t), LineageAddr: grpctest.DeadAddr(t), QueueAddr: grpctest.DeadAddr(t),
		RunnerAddr: grpctest.DeadAddr(t), NotificationAddr: grpctest.DeadAddr(t),
		APIKeys: testKey, InternalToken: grpctest.InternalToken, TestBoundaryToken: "test-boundary-token-0123456789",
	}
	_, err := server.New(context.Background(), cfg, slogx.Discard())
	require.ErrorContains(t, err, "built without the testboundary tag")
	_, err = config.Load(context.Background(), func(k string) string {
		return map[string]string{testboundary.EnvVar: "test-boundary-token-0123456789"}[k]
	})
	require.ErrorContains(t, err, "built without the testboundary tag")
}
