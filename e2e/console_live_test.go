package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// liveEvent is one server-sent event of the console's live dashboard.
type liveEvent struct {
	id, name, data string
	at             time.Time
}

// openLive reads the console's live dashboard as a browser's EventSource
// would: the view's query, and the last event id it got ("" for none).
// cancel drops the connection.
func (b *consoleBrowser) openLive(t *testing.T, query, lastEventID string) (events <-chan liveEvent, cancel func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/console/live?"+query, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	// The browser's client has a timeout; a stream must not.
	client := &http.Client{Jar: b.client.Jar}
	resp, err := client.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	out := make(chan liveEvent, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		var e liveEvent
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.name != "" {
					e.data, e.at = strings.Join(data, "\n"), time.Now()
					out <- e
				}
				e, data = liveEvent{}, nil
			case strings.HasPrefix(line, "id: "):
				e.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return out, cancel
}

// waitLive returns the first event that satisfies ok.
func waitLive(t *testing.T, events <-chan liveEvent, within time.Duration, ok func(liveEvent) bool) liveEvent {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case e, open := <-events:
			require.True(t, open, "the live stream ended")
			if ok(e) {
				return e
			}
		case <-deadline:
			t.Fatalf("no such live event within %s", within)
		}
	}
}

// TestConsoleDashboardMovesCardsLiveAndBackfills, on the real binaries: a
// dashboard's live stream (read as an EventSource would) takes a card out
// of the needs-input view within a second of its session being archived
// elsewhere, and back in once restored; a browser that lost its connection
// — even across a gateway restart — and comes back with its Last-Event-ID
// is sent what changed meanwhile.
func TestConsoleDashboardMovesCardsLiveAndBackfills(t *testing.T) {
	t.Parallel()
	s := newConsoleStackWith(t, stackOptions{turns: true})
	gateway := "http://" + s.addr["gateway"]
	api := restClient{base: gateway, key: s.apiKey}
	id := api.createRunning(t, gitRepo(t), "@demo say ready for you")
	// Another, for the card's actions: archived here for the first time.
	other := api.createRunning(t, gitRepo(t), "@demo say another")
	api.waitStatus(t, id, "needs_input")
	api.waitStatus(t, other, "needs_input")
	card := fmt.Sprintf(`id="session-%d"`, id)

	browser := newConsoleBrowser(t, gateway)
	browser.signIn(t)
	// The page: the card complete (its last transcript line, its queue),
	// and the stream it connects to.
	code, page := browser.get(t, "/console/")
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, card)
	require.Regexp(t, `class="last-line"><span class="visually-hidden">Last transcript line: </span>[^<]*ready for you`, page,
		"the card's last transcript line")
	require.Contains(t, page, "0 queued")
	require.Contains(t, page, `sse-connect="/console/live?class=&amp;q=&amp;status=needs_input"`)
	view := "class=&q=&status=needs_input"

	events, drop := browser.openLive(t, view, "")
	first := waitLive(t, events, 10*time.Second, func(liveEvent) bool { return true })
	require.Contains(t, first.data, card, "without a cursor the view comes at once")

	// Archived through the API: the card leaves the view within a second.
	archivedAt := time.Now()
	code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", id), `{}`)
	require.Equal(t, http.StatusOK, code, body)
	moved := waitLive(t, events, 5*time.Second, func(e liveEvent) bool { return !strings.Contains(e.data, card) })
	require.Less(t, moved.at.Sub(archivedAt), time.Second, "the card moved within a second")
	require.NotEmpty(t, moved.id)

	// Connection dropped; the session is restored meanwhile; the browser
	// comes back with the last id it got and is sent the change.
	drop()
	code, body = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/unarchive", id), `{}`)
	require.Equal(t, http.StatusOK, code, body)
	events, drop = browser.openLive(t, view, moved.id)
	back := waitLive(t, events, 5*time.Second, func(liveEvent) bool { return true })
	require.Contains(t, back.data, card, "the backfill shows the restore it missed")
	require.Greater(t, eventID(t, back), eventID(t, moved))
	drop()

	// Through a gateway restart: the restarted gateway holds nothing, the
	// cursor alone says what was missed, and the browser is still signed
	// in (its sign-in is lineage's, GW-28).
	require.NoError(t, s.interrupt("gateway"))
	s.start("gateway")
	s.waitGateway()
	code, body = api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", id), `{}`)
	require.Equal(t, http.StatusOK, code, body)
	code, body = browser.get(t, "/console/")
	require.Equal(t, http.StatusOK, code, "a gateway restart signs no one out: %s", body)
	events, _ = browser.openLive(t, view, back.id)
	gone := waitLive(t, events, 5*time.Second, func(liveEvent) bool { return true })
	require.NotContains(t, gone.data, card, "the archive made while the browser was away")
	require.Greater(t, eventID(t, gone), eventID(t, back))

	// A card's Trash and its Undo (plain forms here; htmx gets the same
	// answer as fragments): the archive's line is the web UI's.
	code, body = browser.submit(t, "/console/", fmt.Sprintf("/console/sessions/%d/trash", other), url.Values{})
	require.Equal(t, http.StatusSeeOther, code, body)
	require.Equal(t, "archived", api.session(t, other).Status)
	lines := strings.Join(timeline(t, api, other, "transition"), "\n")
	require.Contains(t, lines, "Session moved to trash by a user in the web UI (by the console)")
	code, body = browser.submit(t, "/console/", fmt.Sprintf("/console/sessions/%d/undo-trash", other), url.Values{})
	require.Equal(t, http.StatusSeeOther, code, body)
	api.waitStatus(t, other, "needs_input")

	// "Refresh all": lifecycle's bulk rule continues a needs_input session
	// nobody paused by hand, with the nudge (a turn).
	resumes := func() int { return strings.Count(strings.Join(api.transitions(t, other), " "), "resume") }
	before := resumes()
	code, body = browser.submit(t, "/console/", "/console/refresh-all", url.Values{})
	require.Equal(t, http.StatusSeeOther, code, body)
	_, page = browser.get(t, "/console/")
	require.Contains(t, page, "got the continue nudge")
	require.Eventually(t, func() bool { return resumes() > before }, 30*time.Second, 100*time.Millisecond,
		"refresh all resumed nothing")

	// The quick prompt: a session started from the dashboard, its prompt the
	// admin's web_ui.quick_prompt message there.
	code, body = browser.submit(t, "/console/", "/console/quick-prompt", url.Values{
		"prompt": {"@demo say quick one"}, "git_root": {gitRepo(t)},
	})
	require.Equal(t, http.StatusSeeOther, code, body)
	quick, err := strconv.ParseInt(strings.TrimPrefix(browser.lastLocation, "/console/sessions/"), 10, 64)
	require.NoError(t, err, browser.lastLocation)
	messages := api.humanMessages(t, quick)
	require.Len(t, messages, 1, messages)
	require.Equal(t, "web_ui.quick_prompt", messages[0].EntryPoint)
	require.Equal(t, "@demo say quick one", messages[0].Content)
	require.Equal(t, "tadasant", messages[0].Author)
}

func eventID(t *testing.T, e liveEvent) int64 {
	t.Helper()
	n, err := strconv.ParseInt(e.id, 10, 64)
	require.NoError(t, err, "event id %q", e.id)
	return n
}
