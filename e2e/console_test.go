package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

// consoleBrowser is a browser on the operator console: a cookie jar, no
// redirects followed, so each answer is seen.
type consoleBrowser struct {
	base   string
	client *http.Client
	// lastLocation is where the last form's answer redirected.
	lastLocation string
}

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func newConsoleBrowser(t *testing.T, base string) *consoleBrowser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &consoleBrowser{base: base, client: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *consoleBrowser) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := b.client.Get(b.base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// submit posts form to path with the CSRF token of the page at page.
func (b *consoleBrowser) submit(t *testing.T, page, path string, form url.Values) (int, string) {
	t.Helper()
	code, body := b.get(t, page)
	require.Equal(t, http.StatusOK, code, body)
	m := consoleCSRF.FindStringSubmatch(body)
	require.NotNil(t, m, body)
	form.Set("csrf", m[1])
	if key := regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`).FindStringSubmatch(body); key != nil {
		form.Set("idempotency_key", key[1])
	}
	resp, err := b.client.PostForm(b.base+path, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	b.lastLocation = resp.Header.Get("Location")
	return resp.StatusCode, string(out)
}

// TestConsoleFollowUpIsATurnAndAHumanMessage, on the real binaries: the
// admin signs in to the console with its password (an API key does not
// open it), finds the session waiting for them, and types a follow-up,
// which becomes the session's next turn and the admin's human message
// (web_ui.follow_up), as the REST API then shows; the console's cookie
// opens no API route. A session created in the console records its
// prompt (web_ui.new_session).
func TestConsoleFollowUpIsATurnAndAHumanMessage(t *testing.T) {
	t.Parallel()
	s := newConsoleStackWith(t, stackOptions{turns: true})
	gateway := "http://" + s.addr["gateway"]
	api := restClient{base: gateway, key: s.apiKey}
	id := api.createRunning(t, gitRepo(t), "@demo say first turn")
	api.waitStatus(t, id, "needs_input")

	browser := newConsoleBrowser(t, gateway)
	// An API key is no way in.
	req, err := http.NewRequest(http.MethodGet, gateway+"/console/", nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", s.apiKey)
	resp, err := browser.client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/console/login", resp.Header.Get("Location"))

	browser.signIn(t)
	var code int
	var body string

	// The dashboard opens on what waits for the human: this session.
	code, body = browser.get(t, "/console/")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, fmt.Sprintf(`href="/console/sessions/%d"`, id))
	require.NotContains(t, body, "names nobody in the users roster")

	// The console's cookie opens no API route.
	code, body = browser.get(t, "/api/v1/sessions")
	require.Equal(t, http.StatusUnauthorized, code, body)

	page := fmt.Sprintf("/console/sessions/%d", id)
	code, body = browser.submit(t, page, page+"/follow-up", url.Values{"prompt": {"@demo say typed in the console"}})
	require.Equal(t, http.StatusSeeOther, code, body)

	// A turn: the agent said what the human typed.
	require.Eventually(t, func() bool {
		code, body := api.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/transcript", id), "")
		return code == http.StatusOK && strings.Contains(body, "typed in the console")
	}, 60*time.Second, 200*time.Millisecond, "the follow-up never ran as a turn")
	api.waitStatus(t, id, "needs_input")

	// And the human's message, attributed to the admin.
	messages := api.humanMessages(t, id)
	require.Len(t, messages, 1, messages)
	require.Equal(t, "tadasant", messages[0].Author)
	require.Equal(t, "web_ui.follow_up", messages[0].EntryPoint)
	require.Equal(t, "here", messages[0].Origin)
	require.Equal(t, "@demo say typed in the console", messages[0].Content)

	// The page shows the turn and the message.
	code, body = browser.get(t, page)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "typed in the console")
	require.Contains(t, body, "web_ui.follow_up")

	// A session created in the console: its prompt is the human's
	// web_ui.new_session message there.
	code, body = browser.submit(t, "/console/sessions/new", "/console/sessions", url.Values{
		"prompt": {"@demo say made in the console"}, "git_root": {gitRepo(t)}, "title": {"From the console"}, "parent": {fmt.Sprint(id)},
	})
	require.Equal(t, http.StatusSeeOther, code, body)
	var child int64
	_, err = fmt.Sscanf(strings.TrimPrefix(browser.lastLocation, "/console/sessions/"), "%d", &child)
	require.NoError(t, err, browser.lastLocation)
	var here []string
	for _, m := range api.humanMessages(t, child) {
		if m.Origin == "here" {
			here = append(here, m.EntryPoint+": "+m.Content)
		}
	}
	require.Equal(t, []string{"web_ui.new_session: @demo say made in the console"}, here, body)

	// To the end of its life: archived from the console, which the
	// timeline attributes to the web UI, then restored.
	code, body = browser.submit(t, page, page+"/archive", url.Values{})
	require.Equal(t, http.StatusSeeOther, code, body)
	require.Equal(t, "archived", api.session(t, id).Status)
	require.Contains(t, strings.Join(timeline(t, api, id, "transition"), "\n"),
		"Session moved to trash by a user in the web UI (by the console)")
	code, body = browser.submit(t, page, page+"/restore", url.Values{})
	require.Equal(t, http.StatusSeeOther, code, body)
	require.NotEqual(t, "archived", api.session(t, id).Status)
}

// newConsoleStackWith starts a stack (opts) whose console opens with
// consolePassword.
func newConsoleStackWith(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(consolePassword), bcrypt.MinCost)
	require.NoError(t, err)
	if opts.env == nil {
		opts.env = map[string][]string{}
	}
	opts.env["gateway"] = append(opts.env["gateway"], "ZIMMER_CONSOLE_PASSWORD_HASH="+string(hash))
	return newStackWith(t, opts)
}

// signIn signs the console's human in through the sign-in form.
func (b *consoleBrowser) signIn(t *testing.T) {
	t.Helper()
	code, body := b.submit(t, "/console/login", "/console/login", url.Values{"user": {consoleUser}, "password": {consolePassword}})
	require.Equal(t, http.StatusSeeOther, code, body)
}
