package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
)

// canonicalPaths answers 400 for a request whose path is not canonical,
// before any route sees it: a dot segment ("." or "..", written as is or
// percent-encoded, %2e%2e), an empty segment ("//") or an encoded slash
// (%2F) inside a segment. net/http's ServeMux would answer such a path with
// a redirect to its cleaned form, and a client that follows redirects
// would send its DELETE (or POST) to that other resource: DELETE
// /sessions/7/enqueued_messages/.. would delete session 7. So the gateway
// never cleans a path for the caller; it refuses it, whatever the method.
func canonicalPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := NonCanonical(r.URL); msg != "" {
			jsonhttp.WriteError(w, http.StatusBadRequest, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// NonCanonical says why u's path is not canonical ("" when it is).
func NonCanonical(u *url.URL) string {
	raw := u.EscapedPath()
	if raw == "*" || raw == "" { // OPTIONS *, which net/http answers itself
		return ""
	}
	if !strings.HasPrefix(raw, "/") {
		return fmt.Sprintf("bad request path %q: it must start with /; see /openapi.json", raw)
	}
	segments := strings.Split(raw[1:], "/")
	for i, seg := range segments {
		text, err := url.PathUnescape(seg)
		if err != nil {
			return fmt.Sprintf("bad request path %q: segment %q is not valid percent-encoding; see /openapi.json", raw, seg)
		}
		switch {
		case text == "." || text == "..":
			return fmt.Sprintf("bad request path %q: it holds the dot segment %q, which the gateway neither follows nor redirects; "+
				"name the resource itself (see /openapi.json)", raw, seg)
		case seg == "" && i < len(segments)-1:
			return fmt.Sprintf("bad request path %q: it holds an empty segment (//); name the resource itself (see /openapi.json)", raw)
		case strings.Contains(text, "/"):
			return fmt.Sprintf("bad request path %q: segment %q holds an encoded slash (%%2F), which no id or slug has; "+
				"name the resource itself (see /openapi.json)", raw, seg)
		}
	}
	return ""
}
