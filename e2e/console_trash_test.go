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

// TestTrashUndoTrashAtOnceLeavesNothingSealed, on the real binaries: a
// card's Undo and Trash again within one second (a person's quick clicks),
// three times, each answered as asked. The queue tells an archive its
// unarchive undid from one that came after by their times (QU-12); in
// whole seconds the two were one instant, so the second archive's
// retirement was taken for undone and left its seal: the next Trash waited
// and was refused ("another archive … in progress"), and so was every
// enqueue, until the stale-seal sweep lifted it a minute or two later.
func TestTrashUndoTrashAtOnceLeavesNothingSealed(t *testing.T) {
	t.Parallel()
	s := newConsoleStackWith(t, stackOptions{turns: true})
	gateway := "http://" + s.addr["gateway"]
	api := restClient{base: gateway, key: s.apiKey}
	id := api.createRunning(t, gitRepo(t), "@demo say trash me")
	api.waitStatus(t, id, "needs_input")

	browser := newConsoleBrowser(t, gateway)
	browser.signIn(t)
	// act clicks a card's button (plain forms: the answer is the dashboard
	// with the toast's words as its flash) and returns those words.
	act := func(action string) string {
		t.Helper()
		code, body := browser.submit(t, "/console/", fmt.Sprintf("/console/sessions/%d/%s", id, action), url.Values{})
		require.Equal(t, http.StatusSeeOther, code, body)
		_, page := browser.get(t, "/console/")
		m := flashText.FindStringSubmatch(page)
		require.NotNil(t, m, "no flash after %s: %s", action, page)
		return m[1]
	}
	require.Equal(t, "Session moved to trash.", act("trash"))
	for round := range 3 {
		// Undo and Trash again within one second of the clock the stack
		// shares, as a quick person does it.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
		started := time.Now()
		require.Equal(t, fmt.Sprintf("Session #%d restored.", id), act("undo-trash"), "round %d: undo", round)
		require.Equal(t, "Session moved to trash.", act("trash"), "round %d: trash again", round)
		t.Logf("round %d: undo and trash again in %s", round, time.Since(started).Round(time.Millisecond))
		require.Equal(t, "archived", api.session(t, id).Status)
	}
	require.Equal(t, fmt.Sprintf("Session #%d restored.", id), act("undo-trash"))
	require.Equal(t, "needs_input", api.session(t, id).Status)

	// Restored, the session's queue takes a message once the restore's
	// reopening has reached the queue (an effect, relayed within moments):
	// no seal of the archives undone is left on it, which the stale-seal
	// sweep would only lift after a minute.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/enqueued_messages", id), `{"content": "@demo say later"}`)
		if code == http.StatusOK {
			break
		}
		require.False(t, time.Now().After(deadline), "the restored session's queue still refuses a message: %d %s", code, body)
		time.Sleep(100 * time.Millisecond)
	}
}

// flashText is the words of a page's flash.
var flashText = regexp.MustCompile(`<p class="flash" role="status">([^<]*)</p>`)
