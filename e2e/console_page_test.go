package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

// TestConsoleSessionPageActions, on the real binaries: what the session
// page offers crosses the services it belongs to. Messages queued on a
// running session are reordered, deleted and one interrupts the turn (the
// queue, the runner's ladder, lifecycle); Pause Until read in the user's
// zone sleeps the session with one wake lifecycle lists in that zone, and
// the page cancels it; a refused Pause Until says lifecycle's words; resume
// runs the session again; title and notes are lifecycle's; archiving from
// the page stays on it with Undo and Restore; the transcript streams as
// server-sent events; the inbox reads and dismisses what the agent pushed,
// and the alerts page counts repeats.
func TestConsoleSessionPageActions(t *testing.T) {
	t.Parallel()
	s := newConsoleStackWith(t, stackOptions{turns: true})
	gateway := "http://" + s.addr["gateway"]
	api := restClient{base: gateway, key: s.apiKey}
	browser := newConsoleBrowser(t, gateway)
	browser.signIn(t)
	var code int

	id := api.createRunning(t, gitRepo(t), "@demo say started\n@demo sleep 60s")
	api.waitStatus(t, id, "running")
	page := fmt.Sprintf("/console/sessions/%d", id)

	t.Run("the queue: reorder, delete, interrupt", func(t *testing.T) {
		for _, m := range []string{"@demo say queued one", "@demo say queued two"} {
			code, body := browser.submit(t, page, page+"/enqueue", url.Values{"content": {m}})
			require.Equal(t, http.StatusSeeOther, code, body)
		}
		q := api.queued(t, id)
		require.Len(t, q, 2)
		one, two := q[0].ID, q[1].ID
		_, body := browser.get(t, page)
		require.Contains(t, body, fmt.Sprintf(`action="%s/queue/%d/send-now"`, page, one))
		require.Contains(t, body, fmt.Sprintf(`action="%s/queue/%d/interrupt"`, page, two))

		code, body = browser.submit(t, page, fmt.Sprintf("%s/queue/%d/move", page, two), url.Values{"position": {"1"}})
		require.Equal(t, http.StatusSeeOther, code, body)
		q = api.queued(t, id)
		require.Equal(t, []int64{two, one}, []int64{q[0].ID, q[1].ID}, "moved to the front")

		code, body = browser.submit(t, page, fmt.Sprintf("%s/queue/%d/delete", page, one), url.Values{})
		require.Equal(t, http.StatusSeeOther, code, body)
		q = api.queued(t, id)
		require.Len(t, q, 1)
		require.Equal(t, two, q[0].ID)

		// Interrupting with it stops the sleeping turn; it is the next turn.
		code, body = browser.submit(t, page, fmt.Sprintf("%s/queue/%d/interrupt", page, two), url.Values{})
		require.Equal(t, http.StatusSeeOther, code, body)
		require.Eventually(t, func() bool {
			code, body := api.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/transcript", id), "")
			return code == http.StatusOK && strings.Contains(body, "queued two")
		}, 60*time.Second, 200*time.Millisecond, "the interrupting message never ran")
		api.waitStatus(t, id, "needs_input")
		_, body = api.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d/transcript", id), "")
		require.NotContains(t, body, "queued one", "deleted, never delivered")
	})

	t.Run("Pause Until in the user's zone, then its cancel", func(t *testing.T) {
		zone, err := time.LoadLocation("America/New_York")
		require.NoError(t, err)
		wake := time.Now().Add(2 * time.Hour).In(zone).Truncate(time.Minute)
		code, body := browser.submit(t, page, page+"/pause-until", url.Values{
			"wake_at": {wake.Format("2006-01-02T15:04")}, "timezone": {"America/New_York"},
		})
		require.Equal(t, http.StatusSeeOther, code, body)
		require.Equal(t, "waiting", api.session(t, id).Status, "asleep before the answer")
		armed := api.triggers(t, id)
		require.Len(t, armed, 1)
		require.True(t, armed[0].FireAt.Equal(wake), "the wall-clock time in New York: %s, want %s", armed[0].FireAt, wake.UTC())
		require.Equal(t, "pause_until", armed[0].Source)
		_, body = browser.get(t, page)
		require.Contains(t, body, "Wakes at "+wake.Format("2006-01-02 15:04 MST")+" (America/New_York)")

		code, body = browser.submit(t, page, fmt.Sprintf("%s/triggers/%d/cancel", page, armed[0].ID), url.Values{})
		require.Equal(t, http.StatusSeeOther, code, body)
		require.Empty(t, api.triggers(t, id))

		// A time in the past: refused on the page in lifecycle's words, as
		// REST refuses it.
		code, rest := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/pause_until", id), `{"wake_at":"2020-01-01T00:00"}`)
		require.Equal(t, http.StatusUnprocessableEntity, code, rest)
		var refusal struct{ Message string }
		require.NoError(t, json.Unmarshal([]byte(rest), &refusal), rest)
		code, body = browser.submit(t, page, page+"/pause-until", url.Values{"wake_at": {"2020-01-01T00:00"}, "timezone": {"UTC"}})
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		// The same words; the clock they quote may have ticked a second
		// between the two calls.
		now := regexp.MustCompile(`it is \S+ \(UTC\) now`)
		require.Regexp(t, now, refusal.Message)
		words := strings.Split(template.HTMLEscapeString(now.ReplaceAllString(refusal.Message, "ZIMMERNOW")), "ZIMMERNOW")
		for i := range words {
			words[i] = regexp.QuoteMeta(words[i])
		}
		require.Regexp(t, strings.Join(words, `it is \S+ \(UTC\) now`), body, "lifecycle's words")
	})

	t.Run("resume, title and notes", func(t *testing.T) {
		code, body := browser.submit(t, page, page+"/restart", url.Values{})
		require.Equal(t, http.StatusSeeOther, code, body)
		require.Eventually(t, func() bool { return api.session(t, id).Status != "waiting" }, 30*time.Second, 100*time.Millisecond)
		api.waitStatus(t, id, "needs_input")

		code, body = browser.submit(t, page, page+"/title", url.Values{"title": {"Renamed <in> the console"}})
		require.Equal(t, http.StatusSeeOther, code, body)
		code, body = browser.submit(t, page, page+"/notes", url.Values{"notes": {"mind the docs"}})
		require.Equal(t, http.StatusSeeOther, code, body)
		code, body = api.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", id), "")
		require.Equal(t, http.StatusOK, code, body)
		var got struct{ Session struct{ Title, Notes string } }
		require.NoError(t, json.Unmarshal([]byte(body), &got), body)
		require.Equal(t, "Renamed <in> the console", got.Session.Title)
		require.Equal(t, "mind the docs", got.Session.Notes)

		_, body = browser.get(t, page)
		require.Contains(t, body, "Renamed &lt;in&gt; the console")
		require.Contains(t, body, `<strong aria-current="page">`, "the hierarchy marks this session")
		require.Contains(t, body, "<dt>State</dt><dd>ready</dd>", "the runner's clone")
		require.Contains(t, body, "running → needs_input", "the timeline")
	})

	t.Run("archive from the page stays, with Undo", func(t *testing.T) {
		code, body := browser.submit(t, page, page+"/archive", url.Values{})
		require.Equal(t, http.StatusSeeOther, code, body)
		require.Equal(t, page+"?trashed=1", browser.lastLocation)
		require.Equal(t, "archived", api.session(t, id).Status)
		_, body = browser.get(t, browser.lastLocation)
		require.Contains(t, body, `<button type="submit">Undo</button>`)
		require.Contains(t, body, `<button type="submit">Restore</button>`)
		require.NotContains(t, body, `action="`+page+`/archive"`)
		code, body = browser.submit(t, page, page+"/restore", url.Values{})
		require.Equal(t, http.StatusSeeOther, code, body)
		require.Equal(t, "needs_input", api.session(t, id).Status)
	})

	t.Run("the transcript streams live", func(t *testing.T) {
		_, body := browser.get(t, page)
		m := regexp.MustCompile(`data-transcript-stream="([^"]+)"`).FindStringSubmatch(body)
		require.NotNil(t, m, body)
		req, err := http.NewRequest(http.MethodGet, gateway+strings.ReplaceAll(m[1], "&amp;", "&"), nil)
		require.NoError(t, err)
		resp, err := browser.client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

		code, out := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/follow_up", id), `{"prompt":"@demo say streamed <live>"}`)
		require.Equal(t, http.StatusOK, code, out)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			require.NoError(t, err, "the stream ended before the line came")
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, "streamed &lt;live&gt;") {
				break
			}
		}
	})

	t.Run("the inbox and the alerts", func(t *testing.T) {
		pusher := api.createRunning(t, gitRepo(t), `@demo mcp send_push_notification {"title":"Console <b>inbox</b>","body":"see the page"}`+"\n@demo say sent")
		var pushed []notification
		require.Eventually(t, func() bool {
			pushed, _ = api.notifications(t, fmt.Sprintf("session_id=%d&type=agent_message", pusher))
			return len(pushed) == 1
		}, 60*time.Second, 200*time.Millisecond, "the agent's push never arrived")
		nid := pushed[0].ID

		_, body := browser.get(t, "/console/notifications")
		require.Contains(t, body, "Console &lt;b&gt;inbox&lt;/b&gt;")
		require.Contains(t, body, fmt.Sprintf(`<a href="/console/sessions/%d">session #%d</a>`, pusher, pusher))
		require.Regexp(t, `Inbox <span class="count">\(\d+ unread\)</span>`, body)

		code, body := browser.submit(t, "/console/notifications", fmt.Sprintf("/console/notifications/%d/read", nid), url.Values{})
		require.Equal(t, http.StatusSeeOther, code, body)
		list, _ := api.notifications(t, fmt.Sprintf("session_id=%d&type=agent_message", pusher))
		require.True(t, list[0].Read)
		code, body = browser.submit(t, "/console/notifications", fmt.Sprintf("/console/notifications/%d/dismiss", nid), url.Values{})
		require.Equal(t, http.StatusSeeOther, code, body)
		list, _ = api.notifications(t, fmt.Sprintf("session_id=%d&type=agent_message", pusher))
		require.Empty(t, list, "dismissed: out of the default view")

		alerts := notificationv1.NewNotificationServiceClient(s.dial("notification", s.asService("queue")))
		for range 2 {
			_, err := alerts.RaiseAlert(context.Background(), &notificationv1.RaiseAlertRequest{DedupKey: "e2e_console_alerts", Summary: "raised <twice> for the console"})
			require.NoError(t, err)
		}
		_, body = browser.get(t, "/console/alerts")
		require.Regexp(t, `(?s)raised &lt;twice&gt; for the console</h2>\s*<p class="meta"><span><code>e2e_console_alerts</code></span><span class="count">×2</span>`, body)
	})
}
