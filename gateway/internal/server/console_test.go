package server_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/zimmerhq/zimmer/gateway/internal/console"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/surface"
)

const consolePassword = "server test console password"

var consoleHash = sync.OnceValues(func() ([]byte, error) {
	return bcrypt.GenerateFromPassword([]byte(consolePassword), bcrypt.MinCost)
})

// consolePasswordHash is the hash of consolePassword, computed once.
func consolePasswordHash(t *testing.T) string {
	t.Helper()
	h, err := consoleHash()
	require.NoError(t, err)
	return string(h)
}

// signInToConsole signs in to the console of the gateway at base and
// returns the browser, which follows no redirect.
func signInToConsole(t *testing.T, base string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base + "/console/login")
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	token := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	require.NotNil(t, token, string(page))
	resp, err = c.PostForm(base+"/console/login", url.Values{"csrf": {string(token[1])}, "user": {"tadasant"}, "password": {consolePassword}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	return c
}

// TestTheConsolesCookieOpensNoAPIRoute: signed in to the console, a
// browser's cookie is sent to the API and MCP, which answer 401: the
// console's human is not an API principal.
func TestTheConsolesCookieOpensNoAPIRoute(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, provenanceOpts{})
	c := signInToConsole(t, b.url)
	u, err := url.Parse(b.url + "/console/")
	require.NoError(t, err)
	var cookie *http.Cookie
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == console.CookieName {
			cookie = ck
		}
	}
	require.NotNil(t, cookie, "signed in")
	for _, path := range []string{"/api/v1/sessions", "/mcp", "/api/v1/sessions/1/transcript", "/supervisor/users"} {
		req, err := http.NewRequest(http.MethodGet, b.url+path, nil)
		require.NoError(t, err)
		req.AddCookie(cookie)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s", path, body)
		require.False(t, strings.Contains(string(body), "Signed in"), path)
	}
}

// TestTheConsoleCallsAsItselfFromTheWebUI: the console's calls reach the
// services as the service "console" (no client principal forwarded, so
// lineage believes its boundary) from the web UI surface.
func TestTheConsoleCallsAsItselfFromTheWebUI(t *testing.T) {
	t.Parallel()
	b := setupProvenance(t, provenanceOpts{})
	c := signInToConsole(t, b.url)
	resp, err := c.Get(b.url + "/console/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	calls := b.fake.Calls("ListSessions")
	require.NotEmpty(t, calls)
	for _, call := range calls {
		require.Equal(t, principal.Principal{Kind: principal.Service, Service: "console"}, call.Principal)
		require.Equal(t, surface.WebUI, call.Surface)
	}
}
