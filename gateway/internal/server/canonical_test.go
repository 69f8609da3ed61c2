package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// noRedirects is a client that reports a redirect instead of following it.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// dotSegments are what a caller can put in a path parameter to name
// another resource than the route's: dot segments as is and
// percent-encoded, an encoded slash, an empty segment.
var dotSegments = []string{"..", ".", "%2e%2e", "%2E.", ".%2e", "%2e", "%2f", "%2F..", "a%2Fb", "..%2f..", ""}

// TestNonCanonicalPathsAreRefusedNeverRedirected walks every route of the
// OpenAPI document with every method, each path parameter in turn replaced
// by a dot segment or an encoded slash: each is answered 400 naming the
// path, never a redirect, and no call reaches a service. The case
// first: DELETE …/enqueued_messages/.. used to be redirected (307) to the
// session itself, which a client following redirects then hard-deleted.
func TestNonCanonicalPathsAreRefusedNeverRedirected(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})

	send := func(t *testing.T, client *http.Client, method, path string) response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, b.url+path, strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", adminKey)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return response{status: resp.StatusCode, header: resp.Header, body: body}
	}
	calls := func() int {
		return len(b.fake.Calls()) + len(b.queue.Calls()) + len(b.notifications.Calls()) + len(b.runner.Calls())
	}

	for _, path := range []string{"/api/v1/sessions/1040/enqueued_messages/..", "/api/v1/sessions/1040/enqueued_messages/%2e%2e"} {
		got := send(t, http.DefaultClient, http.MethodDelete, path) // follows redirects, as curl -L does
		require.Equal(t, http.StatusBadRequest, got.status, "%s: %s", path, got.body)
		require.Contains(t, got.errorText(t), "dot segment")
		require.Empty(t, b.fake.Calls("DeleteSession"), "%s reached the session's hard delete", path)
	}

	resp := b.do(t, http.MethodGet, "/openapi.json", "")
	require.Equal(t, http.StatusOK, resp.status)
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(resp.body, &doc))
	param := regexp.MustCompile(`\{[^}]+\}`)
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

	before := calls()
	walked := 0
	for route := range doc.Paths {
		params := param.FindAllStringIndex(route, -1)
		for i := range params {
			for _, bad := range dotSegments {
				var p strings.Builder
				last := 0
				for j, loc := range params {
					p.WriteString(route[last:loc[0]])
					if j == i {
						p.WriteString(bad)
					} else {
						p.WriteString("1")
					}
					last = loc[1]
				}
				p.WriteString(route[last:])
				path := p.String()
				if strings.HasSuffix(path, "/") && (bad == "" || bad == "%2f") {
					continue // a trailing slash: no route, answered 404 below
				}
				for _, method := range methods {
					got := send(t, noRedirects, method, path)
					where := fmt.Sprintf("%s %s", method, path)
					require.Empty(t, got.header.Get("Location"), "%s was redirected (%d)", where, got.status)
					require.Equal(t, http.StatusBadRequest, got.status, "%s: %s", where, got.body)
					if method != http.MethodHead {
						require.Contains(t, got.errorText(t), "bad request path", where)
					}
					walked++
				}
			}
		}
	}
	require.Positive(t, walked)
	require.Equal(t, before, calls(), "a non-canonical path reached a service")

	// The subtrees' roots without their slash, and a trailing slash: no
	// route, never a redirect to one.
	for _, path := range []string{"/api/v1", "/supervisor", "/mcp", "/api/v1/sessions/1/", "/api/v1/sessions/1/enqueued_messages/"} {
		for _, method := range methods {
			got := send(t, noRedirects, method, path)
			require.Empty(t, got.header.Get("Location"), "%s %s was redirected (%d)", method, path, got.status)
			require.Less(t, got.status, 500, "%s %s: %s", method, path, got.body)
			require.False(t, got.status >= 300 && got.status < 400, "%s %s: %d", method, path, got.status)
		}
	}
}
