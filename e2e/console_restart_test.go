package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestARestartRepeatedAcrossAGatewayRestartRestartsOnce, on the real
// binaries: a restart asked again with its idempotency key after the
// gateway restarted (which forgets everything in its memory) is
// answered, not applied — through REST, and through the console's Resume
// form, whose key is rendered into the page.
func TestARestartRepeatedAcrossAGatewayRestartRestartsOnce(t *testing.T) {
	t.Parallel()
	s := newConsoleStackWith(t, stackOptions{turns: true})
	gateway := "http://" + s.addr["gateway"]
	api := restClient{base: gateway, key: s.apiKey}
	viaREST := api.createRunning(t, gitRepo(t), "@demo say restart me over REST")
	viaConsole := api.createRunning(t, gitRepo(t), "@demo say restart me in the console")
	api.waitStatus(t, viaREST, "needs_input")
	api.waitStatus(t, viaConsole, "needs_input")
	resumes := func(id int64) int {
		return strings.Count(strings.Join(api.transitions(t, id), " "), "resume")
	}

	restREST := func() (alreadyApplied bool) {
		t.Helper()
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/restart", viaREST), `{"idempotency_key": "rest-restart-1"}`)
		require.Equal(t, http.StatusOK, code, body)
		var got struct {
			AlreadyApplied bool `json:"already_applied"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &got), body)
		return got.AlreadyApplied
	}
	require.False(t, restREST(), "the first restart applies")

	browser := newConsoleBrowser(t, gateway)
	browser.signIn(t)
	page := fmt.Sprintf("/console/sessions/%d", viaConsole)
	code, body := browser.get(t, page)
	require.Equal(t, http.StatusOK, code, body)
	form := regexp.MustCompile(`action="` + regexp.QuoteMeta(page) + `/restart"[^>]*>.*?name="idempotency_key" value="([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, form, "the Resume form carries its key: %s", body)
	key := form[1]
	// resume sends the Resume form as the page rendered it, with key, and
	// returns the page it comes back to.
	resume := func() string {
		t.Helper()
		code, body := browser.get(t, page)
		require.Equal(t, http.StatusOK, code, body)
		csrf := consoleCSRF.FindStringSubmatch(body)
		require.NotNil(t, csrf, body)
		resp, err := browser.client.PostForm(gateway+page+"/restart", url.Values{"csrf": {csrf[1]}, "idempotency_key": {key}})
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		_, shown := browser.get(t, page)
		return shown
	}
	require.NotContains(t, resume(), alreadySubmitted)

	// Both turns end; the sessions are idle again, so a restart applied
	// twice would run another turn.
	api.waitStatus(t, viaREST, "needs_input")
	api.waitStatus(t, viaConsole, "needs_input")
	require.Equal(t, 1, resumes(viaREST))
	require.Equal(t, 1, resumes(viaConsole))

	require.NoError(t, s.interrupt("gateway"))
	s.start("gateway")
	s.waitGateway()

	require.True(t, restREST(), "the same key after the gateway's restart is answered already_applied")
	require.Equal(t, "needs_input", api.session(t, viaREST).Status)

	// The console: still signed in (the sign-in is lineage's, GW-28), the
	// old page's form sent again with its key.
	require.Contains(t, resume(), alreadySubmitted)
	require.Equal(t, "needs_input", api.session(t, viaConsole).Status)

	require.Equal(t, 1, resumes(viaREST), "REST restarted once")
	require.Equal(t, 1, resumes(viaConsole), "the console restarted once")
}

// alreadySubmitted is what the console says of a form lifecycle answered
// already_applied (console.AlreadyDone).
const alreadySubmitted = "already submitted, so it was not acted on again"
