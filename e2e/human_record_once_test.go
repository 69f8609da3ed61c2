package e2e_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// followUpFormKey is the follow-up form's idempotency key on a session
// page (the page holds other forms' keys too).
var followUpFormKey = regexp.MustCompile(`action="/console/sessions/\d+/follow-up"[^>]*>\s*<input[^>]*>\s*<input type="hidden" name="idempotency_key" value="([^"]+)"`)

// TestConsoleFollowUpSentTwiceIsRecordedOnce, on the real binaries: the
// console's follow-up form submitted twice (a double click, or a resubmit
// after an answer lost with the gateway) is one turn and one human
// message, because the console records it under the form's key and
// lineage records a key once.
func TestConsoleFollowUpSentTwiceIsRecordedOnce(t *testing.T) {
	t.Parallel()
	s := newConsoleStackWith(t, stackOptions{turns: true})
	gateway := "http://" + s.addr["gateway"]
	api := restClient{base: gateway, key: s.apiKey}
	id := api.createRunning(t, gitRepo(t), "@demo say first turn")
	api.waitStatus(t, id, "needs_input")

	browser := newConsoleBrowser(t, gateway)
	browser.signIn(t)
	page := fmt.Sprintf("/console/sessions/%d", id)
	code, body := browser.get(t, page)
	require.Equal(t, http.StatusOK, code, body)
	key := followUpFormKey.FindStringSubmatch(body)
	require.NotNil(t, key, body)
	form := url.Values{"csrf": {consoleCSRF.FindStringSubmatch(body)[1]}, "idempotency_key": {key[1]}, "prompt": {"@demo say once"}}
	for range 2 {
		resp, err := browser.client.PostForm(gateway+page+"/follow-up", form)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	}

	messages := api.humanMessages(t, id)
	require.Len(t, messages, 1, "%+v", messages)
	require.Equal(t, "web_ui.follow_up", messages[0].EntryPoint)
	require.Equal(t, "@demo say once", messages[0].Content)
	require.Eventually(t, func() bool {
		return getSession(t, api, id)["needs_input_count"] == float64(2)
	}, 60*time.Second, 200*time.Millisecond, "the follow-up's turn never ran")
	api.waitStatus(t, id, "needs_input")
	require.Equal(t, float64(2), getSession(t, api, id)["needs_input_count"], "one turn")
}
