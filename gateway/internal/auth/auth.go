// Package auth guards the gateway's API routes with the fleet API keys.
package auth

import (
	"net/http"

	"github.com/zimmerhq/zimmer/gateway/internal/jsonhttp"
	"github.com/zimmerhq/zimmer/services/platform/apikey"
)

// Message is the 401 text.
const Message = "missing or invalid API key: send it as X-API-Key or Authorization: Bearer"

// Require lets a request through to next only when it presents one of keys
// as X-API-Key or "Authorization: Bearer". With no keys configured it lets
// everything through (development only; the server warns at start).
func Require(keys apikey.Set, next http.Handler) http.Handler {
	if !keys.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !keys.Valid(apikey.FromRequest(r)) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="zimmer"`)
			jsonhttp.WriteError(w, http.StatusUnauthorized, Message)
			return
		}
		next.ServeHTTP(w, r)
	})
}
