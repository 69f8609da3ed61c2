package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsoleSignInOnEitherGateway, on the real binaries: two gateways
// behind a plain load balancer (no affinity) serve one signed-in browser.
// Signed in on gateway 1, the browser opens gateway 2's pages; a form
// whose CSRF token gateway 1 rendered is accepted by gateway 2, whose
// flash gateway 1 then shows, once; signed out on gateway 2, it is signed
// out on gateway 1 too, and a copy of its cookie opens neither.
func TestConsoleSignInOnEitherGateway(t *testing.T) {
	t.Parallel()
	s := newConsoleStackWith(t, stackOptions{replicas: true})
	s.waitGatewayAt(s.addr[replica("gateway")])
	one := newConsoleBrowser(t, "http://"+s.addr["gateway"])
	// The same browser (one cookie jar: cookies ignore the port) through
	// the other gateway.
	two := &consoleBrowser{base: "http://" + s.addr[replica("gateway")], client: one.client}

	one.signIn(t)
	code, body := two.get(t, "/console/")
	require.Equal(t, http.StatusOK, code, "signed in on gateway 1, so on gateway 2: %s", body)

	code, body = one.get(t, "/console/sessions/new")
	require.Equal(t, http.StatusOK, code, body)
	token := consoleCSRF.FindStringSubmatch(body)
	require.NotNil(t, token, body)
	resp, err := two.client.PostForm(two.base+"/console/sessions", url.Values{"csrf": {token[1]},
		"prompt": {"@demo say made on gateway 2"}, "git_root": {gitRepo(t)}, "title": {"Two gateways"}})
	require.NoError(t, err)
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "gateway 1's CSRF token, on gateway 2: %s", out)
	page := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(page, "/console/sessions/"), page)
	flash := fmt.Sprintf("Session #%s created.", strings.TrimPrefix(page, "/console/sessions/"))
	code, body = one.get(t, page)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, flash, "gateway 2's flash, shown by gateway 1")
	_, body = two.get(t, page)
	require.NotContains(t, body, flash, "shown once")

	copied := one.client.Jar.Cookies(&url.URL{Scheme: "http", Host: s.addr["gateway"], Path: "/console/"})
	require.NotEmpty(t, copied)
	code, body = two.submit(t, "/console/", "/console/logout", url.Values{})
	require.Equal(t, http.StatusSeeOther, code, body)

	thief := newConsoleBrowser(t, one.base)
	thief.client.Jar.SetCookies(&url.URL{Scheme: "http", Host: s.addr["gateway"], Path: "/console/"}, copied)
	for _, b := range []*consoleBrowser{one, two, thief, {base: two.base, client: thief.client}} {
		code, _ := b.get(t, "/console/")
		require.Equal(t, http.StatusSeeOther, code, "signed out on gateway 2 is signed out everywhere (%s)", b.base)
	}

	// Wrong passwords count once for both gateways (LN-12): four on one
	// and one on the other use the address's five, and even the right
	// password waits on either. Last, since it locks this address out.
	for i := range 5 {
		b := []*consoleBrowser{one, two}[i/4]
		code, body := b.submit(t, "/console/login", "/console/login", url.Values{"user": {consoleUser}, "password": {"guess"}})
		require.Equal(t, http.StatusUnauthorized, code, "attempt %d on %s: %s", i+1, b.base, body)
	}
	for _, b := range []*consoleBrowser{one, two} {
		code, body := b.submit(t, "/console/login", "/console/login", url.Values{"user": {consoleUser}, "password": {consolePassword}})
		require.Equal(t, http.StatusTooManyRequests, code, "locked out on %s: %s", b.base, body)
		require.Contains(t, body, "Too many wrong passwords from your address")
	}
}
