package e2e_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConsoleSpotQueueAndRanked (LC-36), on the real binaries, through the
// console's forms: the Pause Until panel pauses two idle sessions into the
// spot queue while no turn slot is free; the Ranked page lists them in the
// order the scheduler will run them, and its precedence edit and "Make
// priority" reorder the real line (as the REST ranked view shows); when a
// slot frees, the priority session runs first, then the spot one.
func TestConsoleSpotQueueAndRanked(t *testing.T) {
	t.Parallel()
	s := newConsoleStackWith(t, stackOptions{turns: true})
	gateway := "http://" + s.addr["gateway"]
	api := restClient{base: gateway, key: s.apiKey}
	browser := newConsoleBrowser(t, gateway)
	browser.signIn(t)
	repo := gitRepo(t)

	a := api.createClassed(t, repo, "@demo say first turn of a", "spot", 1)
	b := api.createClassed(t, repo, "@demo say first turn of b", "spot", 2)
	api.waitStatus(t, a, "needs_input")
	api.waitStatus(t, b, "needs_input")
	api.setSlots(t, 0)

	for _, id := range []int64{a, b} {
		page := fmt.Sprintf("/console/sessions/%d", id)
		_, body := browser.get(t, page)
		require.Contains(t, body, "Pause into the spot queue", "the Pause Until panel offers the spot queue")
		code, body := browser.submit(t, page, page+"/spot-queue", url.Values{})
		require.Equal(t, http.StatusSeeOther, code, body)
		require.Equal(t, page, browser.lastLocation)
		_, body = browser.get(t, page)
		require.Contains(t, body, "spot queue", "the flash is lifecycle's words: %s", body)
		require.Contains(t, body, "Asleep in the spot queue: number", "the page says where it waits")
		require.Equal(t, "waiting", api.session(t, id).Status)
	}
	require.Equal(t, []int64{b, a}, rankedIDs(api.ranked(t)), "higher precedence first")

	code, body := browser.get(t, "/console/ranked")
	require.Equal(t, http.StatusOK, code, body)
	require.True(t, before(t, body, b, a), "the page lists the line in run order: %s", body)

	// A precedence the console cannot read changes nothing.
	code, body = browser.submit(t, "/console/ranked", fmt.Sprintf("/console/sessions/%d/precedence", a), url.Values{"precedence": {"first"}})
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "is not a whole number")
	require.Equal(t, 1, api.slotSession(t, a).Precedence)

	// Raised above b's, a goes first.
	code, body = browser.submit(t, "/console/ranked", fmt.Sprintf("/console/sessions/%d/precedence", a), url.Values{"precedence": {"9"}})
	require.Equal(t, http.StatusSeeOther, code, body)
	require.Equal(t, "/console/ranked", browser.lastLocation)
	require.Equal(t, 9, api.slotSession(t, a).Precedence)
	require.Equal(t, []int64{a, b}, rankedIDs(api.ranked(t)), "the edit reordered the line")

	// b made priority leaves the spot queue on the next pass and waits as a
	// priority turn, ahead of every spot sleeper.
	code, body = browser.submit(t, "/console/ranked", fmt.Sprintf("/console/sessions/%d/priority", b), url.Values{})
	require.Equal(t, http.StatusSeeOther, code, body)
	require.Equal(t, "priority", api.slotSession(t, b).SchedulingClass)
	var line []rankedSession
	require.Eventually(t, func() bool {
		line = api.ranked(t)
		return len(line) == 2 && line[0].ID == b && line[0].SlotWait != nil && line[0].SlotWait.Reason == "no_slot"
	}, 30*time.Second, 200*time.Millisecond, "the priority session never waited at the head of the line: %+v", line)
	_, body = browser.get(t, "/console/ranked")
	require.True(t, before(t, body, b, a), body)
	require.Contains(t, body, "its turn waits for a slot")

	// One slot: b's turn, then a out of the spot queue.
	api.setSlots(t, 1)
	api.waitStatus(t, b, "needs_input")
	require.Eventually(t, func() bool {
		return len(api.timedTurns(t, a)) == 2 && api.session(t, a).Status == "needs_input"
	}, 60*time.Second, 200*time.Millisecond, "a never ran out of the spot queue")
	bGot, ok := api.grantedAt(t, b)
	require.True(t, ok)
	require.True(t, slices.Contains(api.transitions(t, a), "resume"))
	require.Contains(t, api.timelineText(t, a), "the spot scheduler resumes the session")
	aResumed, ok := api.timelineAt(t, a, "the spot scheduler resumes the session")
	require.True(t, ok, "the timeline says the spot scheduler resumed session %d: %s", a, api.timelineText(t, a))
	require.True(t, bGot.Before(aResumed), "the priority turn (slot at %s) went before the spot sleeper (resumed at %s)", bGot, aResumed)
	_, body = browser.get(t, "/console/ranked")
	require.Contains(t, body, "Nothing waits")
}

func rankedIDs(line []rankedSession) []int64 {
	var ids []int64
	for _, r := range line {
		ids = append(ids, r.ID)
	}
	return ids
}

// before says the Ranked page lists first's row above second's.
func before(t *testing.T, page string, first, second int64) bool {
	t.Helper()
	i, j := strings.Index(page, fmt.Sprintf(`id="ranked-%d"`, first)), strings.Index(page, fmt.Sprintf(`id="ranked-%d"`, second))
	require.True(t, i >= 0 && j >= 0, "both rows are on the page: %s", page)
	return i < j
}
