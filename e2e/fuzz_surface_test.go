package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// The surface fuzz walks every REST route of the served OpenAPI document
// and every MCP tool with what a caller types to probe a server: dot
// segments in every path parameter (raw and percent-encoded) under every
// method, negative, zero and huge numbers in every id (path, query, body,
// tool argument), and whitespace-only strings in every text field. The
// gateway must never answer 5xx (an MCP tool never "internal error") and
// never redirect: a redirected DELETE is a DELETE of another resource
// (issue 20 item 2).
var (
	// dotSegments are path parameters that would name another resource.
	dotSegments = []string{"..", ".", "%2e%2e", "%2E.", ".%2e", "%2e", "%2E%2E", "%2f", "%2F..", "a%2fb", "..%2f.."}
	// badIDs are ids no resource has: negative, zero, past int64, and
	// blanks, as path parameters (already escaped).
	badIDs = []string{"-1", "0", "-9223372036854775808", "9223372036854775807", "9223372036854775808", "99999999999999999999999", "%20", "%20%09%20"}
	// badIDNumbers are the same as JSON numbers in a body or a tool call.
	badIDNumbers = []string{"-1", "0", "-9223372036854775809", "9223372036854775807", "9223372036854775808", "1e30"}
	// blanks are whitespace-only texts.
	blanks = []string{" ", "   ", "\t", "\n \t", "\u00a0", "\u2003\u3000"}
	// allMethods are the methods every route is tried with.
	allMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}
)

// surfaceDoc is the part of /openapi.json the surface fuzz reads.
type surfaceDoc struct {
	Paths map[string]map[string]struct {
		Parameters []struct {
			Name   string      `json:"name"`
			In     string      `json:"in"`
			Type   string      `json:"type"`
			Schema *fuzzSchema `json:"schema"`
		} `json:"parameters"`
	} `json:"paths"`
	Definitions map[string]*fuzzSchema `json:"definitions"`
}

type fuzzSchema struct {
	Ref        string                 `json:"$ref"`
	Type       string                 `json:"type"`
	Properties map[string]*fuzzSchema `json:"properties"`
	Items      *fuzzSchema            `json:"items"`
}

func (d surfaceDoc) resolve(s *fuzzSchema) *fuzzSchema {
	for s != nil && s.Ref != "" {
		s = d.Definitions[strings.TrimPrefix(s.Ref, "#/definitions/")]
	}
	return s
}

// rawClient sends requests as written (no path cleaning) and never
// follows a redirect, so the fuzz sees what the gateway answered.
type rawClient struct {
	base, key string
	client    *http.Client
}

func newRawClient(api restClient) rawClient {
	return rawClient{base: api.base, key: api.key, client: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// answer is one response the fuzz checks.
type answer struct {
	code     int
	location string
	body     string
}

func (c rawClient) do(t *testing.T, method, path, body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, c.base+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-API-Key", c.key)
	resp, err := c.client.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{code: resp.StatusCode, location: resp.Header.Get("Location"), body: string(b)}
}

// surfaceFailures collects what the fuzz found, so one run reports every
// case, grouped, rather than the first.
type surfaceFailures struct {
	cases map[string][]string // by what failed: "5xx", "redirect", ...
	sent  int
}

func (f *surfaceFailures) check(where string, a answer, wantStatus int) {
	f.sent++
	switch {
	case a.code >= 500:
		f.add(fmt.Sprintf("%d", a.code), fmt.Sprintf("%s: %s", where, clip(a.body)))
	case a.code >= 300 && a.code < 400 || a.location != "":
		f.add("redirect", fmt.Sprintf("%s: %d Location %q", where, a.code, a.location))
	case wantStatus != 0 && a.code != wantStatus:
		f.add(fmt.Sprintf("not %d", wantStatus), fmt.Sprintf("%s: %d %s", where, a.code, clip(a.body)))
	}
}

func (f *surfaceFailures) add(kind, what string) {
	if f.cases == nil {
		f.cases = map[string][]string{}
	}
	f.cases[kind] = append(f.cases[kind], what)
}

func (f *surfaceFailures) require(t *testing.T, what string) {
	t.Helper()
	t.Logf("%s: %d requests", what, f.sent)
	if len(f.cases) == 0 {
		return
	}
	var b strings.Builder
	kinds := make([]string, 0, len(f.cases))
	for k := range f.cases {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n%s (%d):", k, len(f.cases[k]))
		for _, c := range f.cases[k] {
			fmt.Fprintf(&b, "\n  %s", c)
		}
	}
	require.Failf(t, what+" found answers it must never give", "%s", b.String())
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// fill writes route with each parameter's value from values, escaped
// already.
func fill(route string, values map[string]string) string {
	return pathParam.ReplaceAllStringFunc(route, func(m string) string { return values[m[1:len(m)-1]] })
}

// fuzzSurface runs the REST and MCP surface fuzz against the stack.
func fuzzSurface(t *testing.T, s *stack, api restClient) {
	raw := newRawClient(api)
	code, body := api.do(t, http.MethodGet, "/openapi.json", "")
	require.Equal(t, http.StatusOK, code)
	var doc surfaceDoc
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	routes := make([]string, 0, len(doc.Paths))
	for r := range doc.Paths {
		routes = append(routes, r)
	}
	sort.Strings(routes)

	// A session with a queued message, for the parameters that are not
	// the one fuzzed.
	target := createREST(t, api, `{"prompt":"the surface fuzz's target","git_root":"g","slug":"surface-target"}`)
	code, body = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", target), `{"content":"held"}`)
	require.Equal(t, http.StatusOK, code, body)
	var queued struct {
		EnqueuedMessage struct{ ID int64 } `json:"enqueued_message"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &queued))
	good := func(session int64) map[string]string {
		return map[string]string{
			"session_id": fmt.Sprint(session), "message_id": fmt.Sprint(queued.EnqueuedMessage.ID), "trigger_id": "1",
			"notification_id": "1", "credential_id": "00000000-0000-4000-8000-000000000000",
		}
	}

	t.Run("DotSegments", func(t *testing.T) {
		var f surfaceFailures
		for _, route := range routes {
			for _, m := range pathParam.FindAllStringSubmatch(route, -1) {
				for _, dot := range dotSegments {
					values := good(target)
					values[m[1]] = dot
					path := fill(route, values)
					for _, method := range allMethods {
						f.check(method+" "+path, raw.do(t, method, path, "{}"), http.StatusBadRequest)
					}
				}
			}
		}
		f.require(t, "dot segments in every path parameter under every method")
		getSession(t, api, target) // still there
	})

	t.Run("BadIDs", func(t *testing.T) {
		var f surfaceFailures
		for _, route := range routes {
			ops := doc.Paths[route]
			for _, m := range pathParam.FindAllStringSubmatch(route, -1) {
				for _, id := range badIDs {
					values := good(target)
					values[m[1]] = id
					path := fill(route, values)
					for _, method := range allMethods {
						f.check(method+" "+path, raw.do(t, method, path, "{}"), 0)
					}
				}
			}
			// Query parameters: ids, pages and sizes out of range; texts
			// that are only whitespace.
			for method, op := range ops {
				for _, p := range op.Parameters {
					var values []string
					switch {
					case p.In != "query":
					case p.Type == "integer":
						values = badIDNumbers
					case p.Type == "string" || p.Type == "array":
						for _, blank := range blanks {
							values = append(values, url.QueryEscape(blank))
						}
					}
					for _, v := range values {
						path := fill(route, good(target)) + "?" + p.Name + "=" + v
						f.check(strings.ToUpper(method)+" "+path, raw.do(t, strings.ToUpper(method), path, ""), 0)
					}
				}
			}
		}
		f.require(t, "negative, zero and huge ids in every path and query id, and whitespace-only query text")
		getSession(t, api, target)
	})

	t.Run("BodyFields", func(t *testing.T) {
		var f surfaceFailures
		for _, route := range routes {
			for method, op := range doc.Paths[route] {
				var schema *fuzzSchema
				for _, p := range op.Parameters {
					if p.In == "body" {
						schema = doc.resolve(p.Schema)
					}
				}
				if schema == nil {
					continue
				}
				// A session of its own per operation: the fuzz may archive,
				// fail or delete it.
				session := createREST(t, api, `{"prompt":"a body fuzz's session","git_root":"g"}`)
				path := fill(route, good(session))
				send := func(name, value string) {
					b := fmt.Sprintf(`{%q:%s}`, name, value)
					f.check(fmt.Sprintf("%s %s %s", strings.ToUpper(method), path, b), raw.do(t, strings.ToUpper(method), path, b), 0)
				}
				names := make([]string, 0, len(schema.Properties))
				for name := range schema.Properties {
					names = append(names, name)
				}
				sort.Strings(names)
				for _, name := range names {
					prop := doc.resolve(schema.Properties[name])
					isID := strings.HasSuffix(name, "_id") || strings.HasSuffix(name, "_ids")
					switch {
					case prop.Type == "string":
						for _, blank := range blanks {
							send(name, jsonString(blank))
						}
						if isID {
							for _, n := range badIDNumbers {
								send(name, jsonString(n))
							}
						}
					case prop.Type == "integer" && isID:
						for _, n := range badIDNumbers {
							send(name, n)
						}
					case prop.Type == "array" && prop.Items != nil && doc.resolve(prop.Items).Type == "string":
						for _, blank := range blanks {
							send(name, "["+jsonString(blank)+"]")
						}
						if isID {
							for _, n := range badIDNumbers {
								send(name, "["+n+"]")
							}
						}
					}
				}
			}
		}
		f.require(t, "whitespace-only text and bad ids in every body field")
	})

	t.Run("MCPTools", func(t *testing.T) {
		c := mcpConnect(t, s, "?tool_groups=sessions,notifications,triggers,self_session")
		tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
		require.NoError(t, err)
		var f surfaceFailures
		for _, tool := range tools.Tools {
			session := createREST(t, api, `{"prompt":"an MCP fuzz's session","git_root":"g"}`)
			props := tool.InputSchema.Properties
			actions := []any{nil}
			if a, ok := props["action"].(map[string]any); ok {
				if enum, ok := a["enum"].([]any); ok {
					actions = enum
				}
			}
			names := make([]string, 0, len(props))
			for name := range props {
				if name != "action" {
					names = append(names, name)
				}
			}
			sort.Strings(names)
			for _, action := range actions {
				call := func(name string, value any) {
					args := map[string]any{name: value}
					if action != nil {
						args["action"] = action
					}
					if _, ok := props["session_id"]; ok && name != "session_id" {
						args["session_id"] = session
					}
					f.sent++
					where := fmt.Sprintf("%s %v", tool.Name, mustJSON(args))
					res, err := callToolErr(c, tool.Name, args)
					switch {
					case err != nil:
						f.add("MCP protocol error", fmt.Sprintf("%s: %v", where, err))
					case strings.Contains(strings.ToLower(text(res)), "internal error"):
						f.add("MCP internal error", fmt.Sprintf("%s: %s", where, clip(text(res))))
					}
				}
				for _, name := range names {
					prop, _ := props[name].(map[string]any)
					typ, _ := prop["type"].(string)
					isID := strings.HasSuffix(name, "_id") || strings.HasSuffix(name, "_ids")
					switch typ {
					case "string":
						for _, blank := range blanks {
							call(name, blank)
						}
						if isID {
							for _, n := range badIDNumbers {
								call(name, n)
							}
						}
					case "integer", "number":
						if isID {
							for _, n := range badIDNumbers {
								call(name, json.Number(n))
							}
						}
					case "array":
						for _, blank := range blanks {
							call(name, []any{blank})
						}
						if isID {
							for _, n := range badIDNumbers {
								call(name, []any{json.Number(n)})
							}
						}
					}
				}
			}
		}
		f.require(t, "whitespace-only text and bad ids in every MCP tool argument")
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func mustJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// callToolErr is callTool that returns a protocol error instead of
// failing.
func callToolErr(c *mcpclient.Client, name string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return c.CallTool(context.Background(), req)
}
