package auth_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/gateway/internal/auth"
	"github.com/zimmerhq/zimmer/services/platform/apikey"
)

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

func serve(h http.Handler, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/sessions", nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestRequire(t *testing.T) {
	t.Parallel()

	h := auth.Require(apikey.Parse("k1,k2"), ok)
	w := serve(h)
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.JSONEq(t, `{"error":"Unauthorized","message":"missing or invalid API key: send it as X-API-Key or Authorization: Bearer",
		"messages":["missing or invalid API key: send it as X-API-Key or Authorization: Bearer"]}`, w.Body.String())
	require.Equal(t, `Bearer realm="zimmer"`, w.Header().Get("WWW-Authenticate"))
	require.Equal(t, http.StatusUnauthorized, serve(h, "X-API-Key", "k3").Code)
	require.Equal(t, http.StatusNoContent, serve(h, "X-API-Key", "k2").Code)
	require.Equal(t, http.StatusNoContent, serve(h, "Authorization", "Bearer k1").Code)
}

func TestRequireWithoutKeysLetsEverythingThrough(t *testing.T) {
	t.Parallel()

	// Development only: the server logs a warning at start.
	h := auth.Require(apikey.Parse(""), ok)
	require.Equal(t, http.StatusNoContent, serve(h).Code)
	require.Equal(t, http.StatusNoContent, serve(h, "X-API-Key", "anything").Code)
}
