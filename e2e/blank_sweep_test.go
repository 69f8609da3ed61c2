package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// whitespaceOnly are strings that are blank after trimming, as a JSON
// string literal's contents: what issue 20 sent where text was wanted.
var whitespaceOnly = []string{` `, ` \n\t`, `\n\r\t`, `\u00a0\u3000`}

// sweepWhitespace sends whitespace-only strings to every string field of
// every REST route that takes a body (as the OpenAPI document lists them)
// and to its session_id path parameter, and to every string argument of
// every MCP tool (as tools/list describes them, once per action of an
// action tool). Every answer must be a success or a refusal: never a 5xx,
// never a redirect, never an MCP "internal error". sessions are the live
// sessions it may act on (it may archive, fail or delete them); message a
// pending message of the first.
func sweepWhitespace(t *testing.T, s *stack, api restClient, sessions []int64, message int64) {
	t.Helper()
	routes := bodyRoutes(t)
	require.NotEmpty(t, routes)
	sent := 0
	for i, r := range routes {
		session := fmt.Sprint(sessions[i%len(sessions)])
		path := func(sessionRef string) string {
			return strings.NewReplacer("{session_id}", sessionRef, "{message_id}", fmt.Sprint(message),
				"{notification_id}", "1", "{credential_id}", "1", "{trigger_id}", "1").Replace(r.path)
		}
		for _, ws := range whitespaceOnly {
			for _, field := range r.strings {
				code, body := api.do(t, r.method, path(session), fmt.Sprintf(`{%q:"%s"}`, field, ws))
				requireNoServerFault(t, code, body, "%s %s {%q: %q}", r.method, r.path, field, ws)
				sent++
			}
			if strings.Contains(r.path, "{session_id}") {
				code, body := api.do(t, r.method, path(strings.NewReplacer(`\n`, "%0A", `\r`, "%0D", `\t`, "%09", " ", "%20",
					`\u00a0`, "%C2%A0", `\u3000`, "%E3%80%80").Replace(ws)), `{}`)
				requireNoServerFault(t, code, body, "%s %s with session_id %q", r.method, r.path, ws)
				sent++
			}
		}
	}

	c := mcpConnect(t, s, "?tool_groups=sessions")
	tools, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	require.NotEmpty(t, tools.Tools)
	for i, tool := range tools.Tools {
		session := sessions[i%len(sessions)]
		actions := []any{nil}
		if a, ok := tool.InputSchema.Properties["action"].(map[string]any); ok {
			if enum, ok := a["enum"].([]any); ok {
				actions = enum
			}
		}
		for _, action := range actions {
			for name, schema := range tool.InputSchema.Properties {
				if p, ok := schema.(map[string]any); !ok || p["type"] != "string" || name == "action" {
					continue
				}
				for _, ws := range whitespaceOnly {
					var v string
					require.NoError(t, json.Unmarshal([]byte(`"`+ws+`"`), &v))
					args := map[string]any{name: v}
					if name != "session_id" {
						args["session_id"] = session
					}
					if name != "message_id" {
						args["message_id"] = message
					}
					if action != nil {
						args["action"] = action
					}
					res := callTool(t, c, tool.Name, args)
					require.NotContains(t, strings.ToLower(text(res)), "internal error", "%s %v", tool.Name, args)
					sent++
				}
			}
		}
	}
	t.Logf("%d requests with whitespace-only strings over %d REST routes and %d MCP tools", sent, len(routes), len(tools.Tools))
}

// requireNoServerFault fails on a 5xx or a redirect.
func requireNoServerFault(t *testing.T, code int, body, format string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	require.Less(t, code, http.StatusInternalServerError, "%s: %d %s", what, code, clip(body))
	require.False(t, code >= 300 && code < 400, "%s redirected: %d", what, code)
}

// bodyRoute is a REST route that takes a JSON body, with its string fields.
type bodyRoute struct {
	method, path string
	strings      []string
}

// bodyRoutes reads every route with a body from the gateway's OpenAPI
// document, in a fixed order.
func bodyRoutes(t *testing.T) []bodyRoute {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "gateway", "openapi", "zimmer.swagger.json"))
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				In     string
				Schema struct {
					Ref string `json:"$ref"`
				}
			}
		}
		Definitions map[string]struct {
			Properties map[string]struct{ Type string }
		}
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	var out []bodyRoute
	for path, ops := range doc.Paths {
		for method, op := range ops {
			for _, p := range op.Parameters {
				if p.In != "body" || p.Schema.Ref == "" {
					continue
				}
				def := doc.Definitions[strings.TrimPrefix(p.Schema.Ref, "#/definitions/")]
				r := bodyRoute{method: strings.ToUpper(method), path: path}
				for name, prop := range def.Properties {
					if prop.Type == "string" {
						r.strings = append(r.strings, name)
					}
				}
				slices.Sort(r.strings)
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b bodyRoute) int { return strings.Compare(a.path+a.method, b.path+b.method) })
	return out
}
