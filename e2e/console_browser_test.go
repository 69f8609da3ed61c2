package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

const (
	// consoleUser is the human the console speaks for: ZIMMER_ADMIN_USER's
	// default, a key of lineage's roster.
	consoleUser     = "tadasant"
	consolePassword = "e2e console password"
)

// TestConsoleInABrowser drives the operator console in a real browser
// (browser_test.go) on the real binaries: sessions run the demo agent, and
// what the page shows is checked against what the REST API says happened.
// One stack serves every subtest; each subtest has its own sessions and
// its own browser context, and only asserts about those, so they run in
// parallel. A new feature's test is one more subtest:
//
//	t.Run("…", func(t *testing.T) {
//		t.Parallel()
//		id := c.session(t, "needs_input", map[string]any{"prompt": "@demo say hello"})
//		p := c.signedIn(t)
//		p.open(c.page(id))
//		require.EqualValues(t, 200, p.click(`form[action$="/pause"] button`))
//		require.Contains(t, p.text(".flash"), "…")
//	})
func TestConsoleInABrowser(t *testing.T) {
	t.Parallel()
	require.Equal(t, devstack.BrowserTest, t.Name(), "make test and make screenshots name this test")
	sharedBrowser(t) // skip (or fail) before a stack is started for nothing
	c := newConsoleStack(t)

	t.Run("sign-in: a wrong password is refused, the right one opens the dashboard, sign-out ends it", func(t *testing.T) {
		t.Parallel()
		p := newBrowserPage(t, c.base)
		require.EqualValues(t, http.StatusOK, p.open("/console/"))
		require.Equal(t, "/console/login", p.path(), "signed out, the console asks who you are")

		require.EqualValues(t, http.StatusUnauthorized, p.signIn(consoleUser, "not the password"))
		require.Equal(t, "/console/login", p.path())
		require.Equal(t, "Wrong user name or password.", p.text(`[role="alert"]`))
		require.Empty(t, p.value("#password"), "a refused password is not written back into the page")

		require.EqualValues(t, http.StatusOK, p.signIn(consoleUser, consolePassword))
		require.Equal(t, "/console/", p.path())
		require.Contains(t, p.text("header"), "Signed in as "+consoleUser)
		require.NotContains(t, eval[string](p, `document.cookie`), "zimmer_console=", "the sign-in cookie is HttpOnly: no script reads it")

		require.EqualValues(t, http.StatusOK, p.click(`form[action="/console/logout"] button`))
		require.Equal(t, "/console/login", p.path())
		p.open("/console/")
		require.Equal(t, "/console/login", p.path(), "signed out for good")
	})

	t.Run("a form posted with a bad CSRF token is refused and does nothing", func(t *testing.T) {
		t.Parallel()
		id := c.session(t, "needs_input", map[string]any{"prompt": "@demo say waiting for you"})
		p := c.signedIn(t)
		p.open(c.page(id))
		archive := fmt.Sprintf(`form[action="%s/archive"]`, c.page(id))
		p.setValue(archive+` input[name="csrf"]`, "forged")
		require.EqualValues(t, http.StatusForbidden, p.click(archive+` button`))
		require.Contains(t, p.text("main"), "security token is missing or stale")
		require.Equal(t, "needs_input", c.api.session(t, id).Status, "the refused archive did nothing")

		// The sign-in form has a token of its own (a double-submitted cookie).
		q := newBrowserPage(t, c.base)
		q.open("/console/login")
		q.setValue(`form.login input[name="csrf"]`, "forged")
		q.typeInto("#user", consoleUser)
		q.typeInto("#password", consolePassword)
		require.EqualValues(t, http.StatusForbidden, q.click(`form.login button[type="submit"]`))
		require.Contains(t, q.text(`[role="alert"]`), "stale")
		q.open("/console/")
		require.Equal(t, "/console/login", q.path(), "a sign-in with a forged token signs nobody in")
	})

	t.Run("the dashboard opens on needs_input only, and keeps a chosen filter until reset", func(t *testing.T) {
		t.Parallel()
		waiting := c.session(t, "needs_input", map[string]any{"prompt": "@demo say waiting for you", "title": "Waiting for you"})
		running := c.session(t, "running", map[string]any{"prompt": "@demo sleep 120s", "title": "Still running"})
		trashed := c.session(t, "needs_input", map[string]any{"prompt": "@demo say soon in the trash", "title": "In the trash"})
		code, body := c.api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", trashed), `{}`)
		require.Equal(t, http.StatusOK, code, body)

		p := c.signedIn(t)
		require.Equal(t, 1, p.count(card(waiting)), "what waits for the human is shown")
		require.Zero(t, p.count(card(running)), "a running session is not waiting for anyone")
		require.Zero(t, p.count(card(trashed)), "the trash is not waiting for anyone")
		for _, s := range eval[[]string](p, `[...document.querySelectorAll(".card .id")].map(e => e.innerText)`) {
			require.True(t, strings.HasSuffix(s, "· needs input"), "every card needs input: %q", s)
		}
		require.Equal(t, []string{"needs_input"}, eval[[]string](p, `[...document.querySelectorAll('input[name="status"]:checked')].map(e => e.value)`))

		// Running ticked too, and applied: shown, and still after a bare
		// visit (the sessions_filters cookie), until Reset.
		p.do(chromedp.Click(chromedp.CSS(`input[name="status"][value="running"]`)))
		require.EqualValues(t, http.StatusOK, p.click(`form.filters button[type="submit"]`))
		require.Equal(t, 1, p.count(card(running)))
		require.Equal(t, 1, p.count(card(waiting)))
		p.open("/console/")
		require.Equal(t, 1, p.count(card(running)), "the filter is kept")
		require.EqualValues(t, http.StatusOK, p.click(`a[href="/console/?reset=1"]`))
		require.Zero(t, p.count(card(running)), "reset: needs_input only again")
		require.Equal(t, 1, p.count(card(waiting)))
	})

	t.Run("a follow-up typed in the page is a turn the demo agent runs and the human's message", func(t *testing.T) {
		t.Parallel()
		id := c.session(t, "needs_input", map[string]any{"prompt": "@demo say first turn", "title": "Answer me"})
		p := c.signedIn(t)
		p.open(c.page(id))
		const typed = "@demo say typed in a real browser"
		p.typeInto("#prompt", typed)
		require.EqualValues(t, http.StatusOK, p.click(`form[action$="/follow-up"] button[type="submit"]`))
		require.Equal(t, c.page(id), p.path())
		require.NotEmpty(t, p.text(".flash"))
		require.NotContains(t, p.text(".flash"), "not recorded")

		p.reloadUntil(t, c.page(id), "the follow-up's turn and the human message", func() bool {
			return strings.Contains(p.text(".transcript"), "typed in a real browser") &&
				strings.Contains(p.text(".human-messages"), typed)
		})
		require.Contains(t, p.text(".human-messages"), "web_ui.follow_up")
		require.Equal(t, []listedHumanMessage{{Author: consoleUser, Origin: "here", EntryPoint: "web_ui.follow_up", Content: typed}},
			c.api.humanMessages(t, id), "the REST API agrees")
	})

	t.Run("the archive guard's refusal is shown, and Archive anyway archives", func(t *testing.T) {
		t.Parallel()
		id := c.session(t, "running", map[string]any{"prompt": "@demo sleep 120s", "title": "Busy"})
		p := c.signedIn(t)
		p.open(c.page(id))
		const queued = "@demo say after the long turn"
		p.typeInto("#content", queued)
		require.EqualValues(t, http.StatusOK, p.click(`form[action$="/enqueue"] button[type="submit"]`))
		require.Len(t, c.api.queued(t, id), 1, "the message waits in the queue")

		require.EqualValues(t, http.StatusUnprocessableEntity, p.click(`.actions form[action$="/archive"] button`))
		refusal := p.text(`main [role="alert"]`)
		require.Contains(t, refusal, fmt.Sprintf("Cannot archive session %d: 1 queued message has not been delivered.", id))
		require.Contains(t, refusal, queued, "the guard names what would be thrown away")
		require.Equal(t, "running", c.api.session(t, id).Status, "refused: nothing changed")

		require.EqualValues(t, http.StatusOK, p.click(`form:has(input[name="force"]) button`))
		require.Equal(t, "archived", c.api.session(t, id).Status)
		require.Equal(t, "archived", p.text(".status"), "the page shows it")
		require.Equal(t, 1, p.count(`.actions form[action$="/restore"] button`), "and offers Restore")
		archived := last(timeline(t, c.api, id, "transition"))
		require.Contains(t, archived, "Session moved to trash by a user in the web UI")
		require.True(t, strings.HasSuffix(archived, "(by the console)"), archived)
	})

	t.Run("keyboard only: sign in and follow up, in reading order, every control named", func(t *testing.T) {
		t.Parallel()
		id := c.session(t, "needs_input", map[string]any{"prompt": "@demo say waiting for the keyboard", "title": "Keyboard"})
		p := newBrowserPage(t, c.base)
		p.open("/console/login")
		require.Empty(t, p.unnamedControls(), "the sign-in page")
		require.Equal(t, "input#user", p.focused(), "the sign-in form opens on the user field")
		p.do(chromedp.KeyEvent(consoleUser), chromedp.KeyEvent(kb.Tab))
		require.Equal(t, "input#password", p.focused())
		p.do(chromedp.KeyEvent(consolePassword), chromedp.KeyEvent(kb.Tab))
		require.Equal(t, "button Sign in", p.focused())
		require.EqualValues(t, http.StatusOK, p.load(chromedp.KeyEvent(kb.Enter)))
		require.Equal(t, "/console/", p.path())
		require.Empty(t, p.unnamedControls(), "the dashboard")

		// Tab from the top of the session page walks it in reading order
		// down to the follow-up.
		p.open(c.page(id))
		require.Empty(t, p.unnamedControls(), "the session page")
		order := p.focusOrder()
		var walked []string
		for len(walked) < len(order) && last(walked) != "textarea#prompt" {
			p.do(chromedp.KeyEvent(kb.Tab))
			walked = append(walked, p.focused())
		}
		require.Equal(t, "textarea#prompt", last(walked), "Tab reaches the follow-up: %v", walked)
		require.Equal(t, order[:len(walked)], walked, "focus follows the reading order")

		const typed = "@demo say typed with the keyboard only"
		p.do(chromedp.KeyEvent(typed), chromedp.KeyEvent(kb.Tab))
		require.Equal(t, "input[force_immediate=1]", p.focused())
		p.do(chromedp.KeyEvent(kb.Tab))
		require.Equal(t, "button Send", p.focused())
		require.EqualValues(t, http.StatusOK, p.load(chromedp.KeyEvent(kb.Enter)))
		require.Equal(t, c.page(id), p.path())
		require.Equal(t, []listedHumanMessage{{Author: consoleUser, Origin: "here", EntryPoint: "web_ui.follow_up", Content: typed}},
			c.api.humanMessages(t, id))
	})

	t.Run("a phone-width screen never scrolls sideways", func(t *testing.T) {
		t.Parallel()
		// Words no line can hold, where a person's text goes.
		unbroken := strings.Repeat("Unbroken", 25)
		id := c.session(t, "needs_input", map[string]any{
			"prompt": "@demo say " + unbroken, "title": unbroken, "agent_root": unbroken,
		})
		p := newBrowserPage(t, c.base)
		p.do(chromedp.EmulateViewport(360, 740, chromedp.EmulateScale(2), chromedp.EmulateMobile))
		for _, step := range []struct {
			page string
			do   func()
		}{
			{"the sign-in page", func() { p.open("/console/login") }},
			{"the dashboard", func() { require.EqualValues(t, http.StatusOK, p.signIn(consoleUser, consolePassword)) }},
			{"a session page", func() { p.open(c.page(id)) }},
			{"the new-session form", func() { p.open("/console/sessions/new") }},
		} {
			step.do()
			require.LessOrEqual(t, p.horizontalOverflow(), 0, "%s scrolls sideways on a 360-pixel-wide screen", step.page)
		}
	})

	t.Run("markup and script typed into every field never run", func(t *testing.T) {
		t.Parallel()
		// Closes an attribute, then tries a script element, an event
		// handler and plain markup; each would leave a trace that
		// requireNothingRan looks for.
		const xss = `"'><script>window.__zimmerXSS="script"</script><img src=x data-zimmer-xss onerror="window.__zimmerXSS='img'"><b data-zimmer-xss>b</b>`

		// Signing in: nothing typed is shown back, nothing runs.
		q := newBrowserPage(t, c.base)
		require.EqualValues(t, http.StatusUnauthorized, q.signIn(xss, xss))
		q.requireNothingRan("the refused sign-in")
		// A path typed into the address bar is named by the page that
		// says it does not exist (without a slash: the gateway refuses an
		// encoded one before any page).
		const inPath = `"'><img src=x data-zimmer-xss onerror="window.__zimmerXSS='path'"><b data-zimmer-xss>b`
		require.EqualValues(t, http.StatusNotFound, q.open("/console/"+url.PathEscape(inPath)))
		q.requireNothingRan("the no-such-page page")
		require.Contains(t, q.text("main"), inPath)

		p := c.signedIn(t)
		// The new-session form, refused twice (the console's own rule, then
		// lifecycle's), comes back with every field as typed, as text.
		fields := []string{"#prompt", "#title", "#git_root", "#branch", "#agent_root", "#agent_runtime", "#parent"}
		p.open("/console/sessions/new")
		for _, f := range fields {
			p.typeInto(f, xss)
		}
		require.EqualValues(t, http.StatusUnprocessableEntity, p.click(`form[action="/console/sessions"] button[type="submit"]`), "the parent is no session id")
		p.requireNothingRan("the new-session form refused by the console")
		for _, f := range fields {
			require.Equal(t, xss, p.value(f), "%s comes back as typed", f)
		}
		p.setValue("#parent", "")
		p.setValue("#git_root", "")
		require.EqualValues(t, http.StatusUnprocessableEntity, p.click(`form[action="/console/sessions"] button[type="submit"]`), "git_root is required")
		p.requireNothingRan("the new-session form refused by lifecycle")
		require.Equal(t, xss, p.value("#title"))

		// Created, with the markup in its prompt (which the agent says, so
		// it is a transcript line too), title and agent root; then a
		// follow-up and a queued message typed in the page, and notes an
		// agent wrote.
		p.open("/console/sessions/new")
		p.typeInto("#prompt", "@demo say "+xss)
		p.typeInto("#title", xss)
		p.typeInto("#agent_root", xss)
		p.typeInto("#git_root", c.repo)
		p.typeInto("#branch", "main")
		require.EqualValues(t, http.StatusOK, p.click(`form[action="/console/sessions"] button[type="submit"]`))
		p.requireNothingRan("the created session's page")
		var id int64
		_, err := fmt.Sscanf(p.path(), "/console/sessions/%d", &id)
		require.NoError(t, err, p.path())
		c.api.waitStatus(t, id, "needs_input")
		notes, err := json.Marshal(map[string]string{"notes": xss})
		require.NoError(t, err)
		code, body := c.api.do(t, http.MethodPatch, fmt.Sprintf("/api/v1/sessions/%d", id), string(notes))
		require.Equal(t, http.StatusOK, code, body)
		p.open(c.page(id))
		p.typeInto("#prompt", "@demo say "+xss)
		require.EqualValues(t, http.StatusOK, p.click(`form[action$="/follow-up"] button[type="submit"]`))
		p.typeInto("#content", xss)
		require.EqualValues(t, http.StatusOK, p.click(`form[action$="/enqueue"] button[type="submit"]`))

		p.reloadUntil(t, c.page(id), "the follow-up's turn", func() bool {
			return strings.Count(p.text(".transcript"), xss) >= 2
		})
		p.requireNothingRan("the session's page")
		require.Equal(t, xss, p.text("h1"), "the title, as text")
		require.Equal(t, xss, p.text(".root"), "the agent root, as text")
		p.do(chromedp.Click(chromedp.CSS(".notes summary")), chromedp.Click(chromedp.CSS(".prompt summary")))
		require.Equal(t, xss, strings.TrimSpace(p.text(".notes pre")), "the notes, as text")
		require.Equal(t, "@demo say "+xss, strings.TrimSpace(p.text(".prompt pre")), "the prompt, as text")
		require.GreaterOrEqual(t, strings.Count(p.text(".human-messages"), xss), 3, "the prompt, the follow-up and the queued message, as text")

		// The dashboard, searched for it with every status: the search box
		// keeps what was typed, the card shows the title.
		p.open("/console/")
		p.do(chromedp.Click(chromedp.CSS(`input[name="status"][value="needs_input"]`)))
		p.typeInto("#q", xss)
		require.EqualValues(t, http.StatusOK, p.click(`form.filters button[type="submit"]`))
		p.requireNothingRan("the dashboard searched for it")
		require.Equal(t, xss, p.value("#q"))
		require.Equal(t, xss, p.text(card(id)+" .title"))
	})

	t.Run("a card moves live when its session changes state, without a reload", func(t *testing.T) {
		t.Parallel()
		id := c.session(t, "needs_input", map[string]any{"prompt": "@demo say ready to move", "title": "Moves live"})
		p := c.signedIn(t)
		// Running ticked beside Needs input: the card stays in view and its
		// status moves.
		p.do(chromedp.Click(chromedp.CSS(`input[name="status"][value="running"]`)))
		require.EqualValues(t, http.StatusOK, p.click(`form.filters button[type="submit"]`))
		require.Equal(t, "needs_input", p.attribute(card(id), "data-status"))
		p.markPage()
		code, body := c.api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/follow_up", id), `{"prompt": "@demo sleep 3s\n@demo say moved back"}`)
		require.Equal(t, http.StatusOK, code, body)
		p.waitFor(t, "the card shows the session running", 5*time.Second,
			fmt.Sprintf(`document.querySelector(%s)?.dataset.status === "running"`, jsString(card(id))))
		require.Contains(t, p.text(card(id)+" .status"), "running")
		p.waitFor(t, "the card back in needs input when the turn ends", 30*time.Second,
			fmt.Sprintf(`document.querySelector(%s)?.dataset.status === "needs_input"`, jsString(card(id))))
		require.True(t, p.samePage(), "live: the page was never reloaded")

		// The default view (needs input only): the card leaves while its
		// session runs and comes back when it rests.
		require.EqualValues(t, http.StatusOK, p.click(`a[href="/console/?reset=1"]`))
		p.markPage()
		code, body = c.api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/follow_up", id), `{"prompt": "@demo sleep 3s\n@demo say back again"}`)
		require.Equal(t, http.StatusOK, code, body)
		p.waitFor(t, "the card leaves the view", 5*time.Second, fmt.Sprintf(`!document.querySelector(%s)`, jsString(card(id))))
		p.waitFor(t, "the card comes back", 30*time.Second, fmt.Sprintf(`!!document.querySelector(%s)`, jsString(card(id))))
		require.True(t, p.samePage())
	})

	t.Run("trash shows the undo toast, and undo within ten seconds puts the card back", func(t *testing.T) {
		t.Parallel()
		id := c.session(t, "needs_input", map[string]any{"prompt": "@demo say trash me", "title": "Trash me"})
		p := c.signedIn(t)
		p.markPage()
		trashed := time.Now()
		p.clickLive(fmt.Sprintf("#trash-%d", id))
		p.waitFor(t, "the card goes and the toast offers Undo", 5*time.Second,
			fmt.Sprintf(`!document.querySelector(%s) && document.querySelector("#toast.shown button")?.innerText === "Undo"`, jsString(card(id))))
		require.Contains(t, p.text("#toast"), "Session moved to trash.")
		require.Equal(t, "archived", c.api.session(t, id).Status)

		p.do(chromedp.Click(chromedp.CSS("#toast button")))
		p.waitFor(t, "the card is back", 5*time.Second, fmt.Sprintf(`!!document.querySelector(%s)`, jsString(card(id))))
		require.Less(t, time.Since(trashed), 10*time.Second, "undone inside the toast's ten seconds")
		// The live feed may bring the card back before the undo's own
		// answer replaces the toast.
		restored := fmt.Sprintf("Session #%d restored.", id)
		p.waitFor(t, "the toast says the session is restored", 5*time.Second,
			fmt.Sprintf(`document.querySelector("#toast")?.innerText.includes(%s)`, jsString(restored)))
		require.Contains(t, p.text("#toast"), restored)
		require.Equal(t, "needs_input", c.api.session(t, id).Status)
		require.True(t, p.samePage(), "trash and undo without a reload")
	})

	t.Run("the drawer takes the focus when it opens, and Escape closes it and gives the focus back", func(t *testing.T) {
		t.Parallel()
		id := c.session(t, "needs_input", map[string]any{"prompt": "@demo say open me", "title": "In the drawer"})
		p := c.signedIn(t)
		opener := fmt.Sprintf("open-%d", id)
		p.clickLive("#" + opener)
		p.waitFor(t, "the drawer open with the focus on the session's heading", 10*time.Second,
			`document.getElementById("drawer").open && document.activeElement?.matches("#drawer-body h1")`)
		require.Equal(t, "/console/", p.path(), "the dashboard stays")
		require.Equal(t, "In the drawer", p.text("#drawer-body h1"))
		p.do(chromedp.KeyEvent(kb.Escape))
		p.waitFor(t, "the drawer closed, the focus back on the card's link", 5*time.Second,
			fmt.Sprintf(`!document.getElementById("drawer").open && document.activeElement?.id === %s`, jsString(opener)))
	})

	t.Run("an elicitation answered in the page reaches the demo agent", func(t *testing.T) {
		t.Parallel()
		id := c.session(t, "needs_input", map[string]any{"prompt": "@demo elicit 60s Ship it from the browser?\n@demo say shipped as told", "title": "Asks"})
		p := c.signedIn(t)
		p.open(c.page(id))
		require.Equal(t, "Ship it from the browser?", p.text("section.elicitation .question"))
		const answer = "yes, from the browser"
		p.typeInto(`.elicitation-answer input[name="content.answer"]`, answer)
		require.EqualValues(t, http.StatusOK, p.click(`.elicitation-answer button[value="accept"]`))
		require.Zero(t, p.count(`main .error[role="alert"]`), "no refusal: the answer was taken")
		require.Eventually(t, func() bool {
			return strings.Join(c.api.transitions(t, id), " ") == "start block_on_elicitation unblock_from_elicitation pause"
		}, 30*time.Second, 100*time.Millisecond, "the turn did not go on after the answer: %v", c.api.transitions(t, id))
		raw := transcriptRaw(t, c.api, id)
		require.Contains(t, raw, answer, "the agent read the answer's content")
		require.Contains(t, raw, "shipped as told", "the agent went on after the answer")
		p.reloadUntil(t, c.page(id), "the agent going on, the question gone", func() bool {
			return strings.Contains(p.text(".transcript"), "shipped as told") && p.count("section.elicitation") == 0
		})
	})

	t.Run("the hierarchy shows a child spawned and its state while the page is open", func(t *testing.T) {
		t.Parallel()
		parent := c.session(t, "needs_input", map[string]any{"prompt": "@demo say the parent", "title": "Parent"})
		p := c.signedIn(t)
		p.open(c.page(parent))
		require.Equal(t, "1 sessions", p.text("#hierarchy .counts"))
		p.markPage()
		child := c.session(t, "needs_input", map[string]any{"prompt": "@demo say the child", "title": "Spawned child", "parent_session_id": parent})
		p.waitFor(t, "the child in the hierarchy, at rest", 10*time.Second,
			fmt.Sprintf(`document.querySelector("#hierarchy")?.innerText.includes("#%d · needs input")`, child))
		require.Contains(t, p.text("#hierarchy"), "Spawned child")
		require.Equal(t, "2 sessions", p.text("#hierarchy .counts"))

		code, body := c.api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/archive", child), `{}`)
		require.Equal(t, http.StatusOK, code, body)
		p.waitFor(t, "the child's new state in the hierarchy", 10*time.Second,
			fmt.Sprintf(`document.querySelector("#hierarchy")?.innerText.includes("#%d · archived")`, child))
		require.True(t, p.samePage(), "live: the page was never reloaded")
	})

	t.Run("Pause Until's spot queue: the scheduler resumes the session when a slot is free; Ranked shows the line", func(t *testing.T) {
		t.Parallel()
		id := c.session(t, "needs_input", map[string]any{"prompt": "@demo say idle for now", "title": "Spot me"})
		p := c.signedIn(t)
		p.open(c.page(id))
		p.do(chromedp.Click(chromedp.CSS(`details.pause-until summary`)))
		require.EqualValues(t, http.StatusOK, p.click(`form[action$="/spot-queue"] button[type="submit"]`))
		require.Equal(t, c.page(id), p.path())
		require.Contains(t, p.text(".flash"), "spot queue", "lifecycle's words")
		require.Equal(t, "spot", c.api.slotSession(t, id).SchedulingClass, "it is spot now")
		// This stack sets no limit: a slot is free, so the spot scheduler
		// resumes the sleeper at once, through the system-recovery resume.
		require.Eventually(t, func() bool {
			return strings.Join(c.api.transitions(t, id), " ") == "start pause sleep resume pause"
		}, 60*time.Second, 200*time.Millisecond, "the spot sleeper was not resumed once: %v", c.api.transitions(t, id))
		p.reloadUntil(t, c.page(id), "the timeline saying the spot scheduler resumed it", func() bool {
			return strings.Contains(p.text(".timeline"), "the spot scheduler resumes the session")
		})
		require.EqualValues(t, http.StatusOK, p.click(`header a[href="/console/ranked"]`))
		require.Equal(t, "/console/ranked", p.path())
		require.Equal(t, "Ranked", p.text("main h1"))
		require.Equal(t, 0, p.count(fmt.Sprintf("#ranked-%d", id)), "resumed: no longer in line")
	})

	t.Run("the category grids: Starred first, then the categories in order, a frozen one without refresh; cards move grids live", func(t *testing.T) {
		t.Parallel()
		work := c.api.createCategory(t, `{"name": "Grid work <i>"}`)
		parked := c.api.createCategory(t, `{"name": "Grid parked"}`)
		code, body := c.api.do(t, http.MethodPatch, "/api/v1/categories/"+parked.ID.String(), `{"frozen": true}`)
		require.Equal(t, http.StatusOK, code, body)
		filed := c.session(t, "needs_input", map[string]any{"prompt": "@demo say filed under work zebracorn", "title": "Filed under work"})
		starred := c.session(t, "needs_input", map[string]any{"prompt": "@demo say starred one", "title": "Starred one"})
		frozen := c.session(t, "needs_input", map[string]any{"prompt": "@demo say parked one", "title": "Parked one"})
		for id, cat := range map[int64]string{filed: work.ID.String(), starred: work.ID.String(), frozen: parked.ID.String()} {
			code, body := c.api.do(t, http.MethodPatch, fmt.Sprintf("/api/v1/sessions/%d", id), `{"category_id": `+cat+`}`)
			require.Equal(t, http.StatusOK, code, body)
		}
		code, body = c.api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/star", starred), `{}`)
		require.Equal(t, http.StatusOK, code, body)

		workGrid, parkedGrid := "#category_grid_"+work.ID.String(), "#category_grid_"+parked.ID.String()
		in := func(grid string, id int64) string {
			return fmt.Sprintf(`!!document.querySelector(%s)`, jsString(grid+" "+card(id)))
		}
		p := c.signedIn(t)
		require.Equal(t, 1, p.count("#starred_grid "+card(starred)), "a starred session sits in Starred, whatever its category")
		require.Equal(t, 1, p.count(workGrid+" "+card(filed)))
		require.Zero(t, p.count(workGrid+" "+card(starred)), "one card per session")
		require.Equal(t, 1, p.count(parkedGrid+" "+card(frozen)))
		require.Contains(t, p.text(workGrid+"-name"), "Grid work <i>", "the category's name as text")
		grids := eval[[]string](p, `[...document.querySelectorAll("#cards ol.cards")].map(e => e.id)`)
		require.Equal(t, "starred_grid", grids[0], "Starred first")
		require.Less(t, indexOf(grids, "category_grid_"+work.ID.String()), indexOf(grids, "category_grid_"+parked.ID.String()), "categories in position order")
		require.Equal(t, 1, p.count(workGrid+"-refresh"), "a category's own refresh")
		require.Zero(t, p.count(parkedGrid+"-refresh"), "a frozen category is skipped, as Refresh all skips it")

		// The card's own Unstar and Move answer with the grids as they now
		// stand; a state change arrives live and re-renders every grid, each
		// card in its own (Running ticked too, so the running card stays).
		p.do(chromedp.Click(chromedp.CSS(`input[name="status"][value="running"]`)))
		require.EqualValues(t, http.StatusOK, p.click(`form.filters button[type="submit"]`))
		p.markPage()
		p.clickLive(fmt.Sprintf("#star-%d", starred))
		p.waitFor(t, "the unstarred card in its category's grid", 5*time.Second, in(workGrid, starred))
		// Chosen and sent in the click's own step: a live swap in between
		// would put the select back as the server rendered it, or leave a
		// form htmx has not taken yet, which the browser would post itself.
		p.clickLiveAfter(fmt.Sprintf("#move-%d", frozen), fmt.Sprintf(`document.querySelector("#category-%d").value = "0"`, frozen))
		p.waitFor(t, "the card moved to Uncategorized", 5*time.Second, in("#sessions_grid", frozen))
		require.Zero(t, p.count(parkedGrid), "an empty grid is left out")
		grids = eval[[]string](p, `[...document.querySelectorAll("#cards ol.cards")].map(e => e.id)`)
		require.Equal(t, "sessions_grid", grids[len(grids)-1], "Uncategorized last")
		code, body = c.api.do(t, http.MethodPost, fmt.Sprintf("/api/v1/sessions/%d/follow_up", filed), `{"prompt": "@demo sleep 2s\n@demo say done"}`)
		require.Equal(t, http.StatusOK, code, body)
		p.waitFor(t, "the running card, live, still in its category's grid", 5*time.Second,
			fmt.Sprintf(`document.querySelector(%s)?.dataset.status === "running"`, jsString(workGrid+" "+card(filed))))
		require.True(t, p.samePage(), "live: the page was never reloaded")

		// The category's refresh is its grid's own control; what it acts on
		// is the console test's (TestTheDashboardsCategoryGridsAndAdvancedSearch):
		// clicked here it would nudge the sessions the other subtests' stack
		// shares, which inference files into this category too.
		require.Equal(t, "/console/categories/"+work.ID.String()+"/refresh", eval[string](p,
			fmt.Sprintf(`document.querySelector(%s)?.form?.getAttribute("action") ?? ""`, jsString(workGrid+"-refresh"))))

		// Advanced: the transcript's words (the runner's index), typed in
		// the form, give one flat list; the same search over REST.
		p.reloadUntil(t, "/console/", "the dashboard", func() bool { return p.count("form.filters") == 1 })
		p.do(chromedp.Click(chromedp.CSS("details.advanced summary")))
		p.typeInto("#transcript", "under work zebracorn")
		require.EqualValues(t, http.StatusOK, p.click(`form.filters button[type="submit"]`))
		require.Zero(t, p.count("#starred_grid"), "a search replaces the grids")
		require.Equal(t, []int64{filed}, cardIDs(p))
		code, body = c.api.do(t, http.MethodGet, "/api/v1/sessions?transcript=under+work+zebracorn&show_archived=true", "")
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, []string{fmt.Sprint(filed)}, listedIDs(t, body))
		code, body = c.api.do(t, http.MethodGet, "/api/v1/sessions?transcript=%21%21%21", "")
		require.Equal(t, http.StatusUnprocessableEntity, code, body)
		require.Contains(t, body, "no word to search the transcripts for")
	})

	t.Run("screenshots", func(t *testing.T) {
		t.Parallel()
		dir := os.Getenv(devstack.ScreenshotsDirEnv) // make screenshots: docs/screenshots
		if dir == "" {
			dir = t.TempDir()
		}
		id := c.session(t, "needs_input", map[string]any{
			"prompt":     "@demo say Looking at the flaky checkout test\n@demo say The retry hides a race between the cart and the stock check; a fix is on the branch",
			"title":      "Fix the flaky checkout test",
			"agent_root": "shop/web",
		})
		c.session(t, "needs_input", map[string]any{"prompt": "@demo say pgx v5.12 builds; two call sites need the new pool config", "title": "Upgrade pgx", "agent_root": "platform"})
		c.session(t, "needs_input", map[string]any{"prompt": "@demo say The draft is in RELEASE.md", "title": "Write the release notes for 2.4", "agent_root": "docs"})
		p := c.signedIn(t)
		p.open(c.page(id))
		p.typeInto("#prompt", "@demo say Merged the fix; the test passed 200 runs in a row")
		require.EqualValues(t, http.StatusOK, p.click(`form[action$="/follow-up"] button[type="submit"]`))
		p.reloadUntil(t, c.page(id), "the follow-up's turn", func() bool {
			return strings.Contains(p.text(".transcript"), "200 runs in a row")
		})
		c.api.waitStatus(t, id, "needs_input")

		p.open("/console/")
		writeScreenshot(t, p, filepath.Join(dir, "console-dashboard.png"))
		p.open(c.page(id))
		writeScreenshot(t, p, filepath.Join(dir, "console-session.png"))
	})
}

// consoleStack is a stack whose sessions run the demo agent and whose
// console opens with consolePassword.
type consoleStack struct {
	api  restClient
	base string // the gateway
	repo string // a git repository the sessions clone
}

func newConsoleStack(t *testing.T) *consoleStack {
	t.Helper()
	s := newConsoleStackWith(t, stackOptions{turns: true})
	base := "http://" + s.addr["gateway"]
	return &consoleStack{api: restClient{base: base, key: s.apiKey}, base: base, repo: gitRepo(t)}
}

// signedIn is a new browser context, signed in through the sign-in form,
// on the dashboard.
func (c *consoleStack) signedIn(t *testing.T) *browserPage {
	t.Helper()
	p := newBrowserPage(t, c.base)
	require.EqualValues(t, http.StatusOK, p.signIn(consoleUser, consolePassword))
	require.Equal(t, "/console/", p.path())
	return p
}

// session creates a session in the repository with fields (at least a
// prompt), over REST, and waits until it has status.
func (c *consoleStack) session(t *testing.T, status string, fields map[string]any) int64 {
	t.Helper()
	req := map[string]any{"git_root": c.repo, "branch": "main"}
	maps.Copy(req, fields)
	body, err := json.Marshal(req)
	require.NoError(t, err)
	id := createREST(t, c.api, string(body))
	c.api.waitStatus(t, id, status)
	return id
}

// page is session id's page in the console.
func (c *consoleStack) page(id int64) string { return fmt.Sprintf("/console/sessions/%d", id) }

// card is the selector of session id's card on the dashboard.
func card(id int64) string { return fmt.Sprintf("#session-%d", id) }

type listedHumanMessage struct {
	Author, Origin, Content string
	EntryPoint              string `json:"entry_point"`
}

// humanMessages are session id's human messages, as the REST API lists them
// (listedHumanMessage: what a test compares of each).
func (c restClient) humanMessages(t *testing.T, id int64) []listedHumanMessage {
	t.Helper()
	code, body := c.do(t, http.MethodGet, fmt.Sprintf("/api/v1/sessions/%d", id), "")
	require.Equal(t, http.StatusOK, code, body)
	var detail struct {
		HumanMessages []listedHumanMessage `json:"human_messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &detail), body)
	return detail.HumanMessages
}

// reloadUntil loads path again and again until shown says the page shows
// what a test waits for (what), for up to a minute.
func (p *browserPage) reloadUntil(t *testing.T, path, what string, shown func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p.open(path)
		if shown() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed on %s; the page reads:\n%s", what, path, p.text("main"))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// markPage marks the page shown, so samePage tells whether it was
// reloaded or left since.
func (p *browserPage) markPage() {
	p.t.Helper()
	require.True(p.t, eval[bool](p, `window.__zimmerSamePage = true`))
}

// samePage reports whether the page markPage marked is still the one shown.
func (p *browserPage) samePage() bool {
	p.t.Helper()
	return eval[bool](p, `window.__zimmerSamePage === true`)
}

// waitFor evaluates the JavaScript expression until it is true, for up to
// within, failing with what the page reads when it never is (what).
func (p *browserPage) waitFor(t *testing.T, what string, within time.Duration, expr string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !eval[bool](p, "Boolean("+expr+")") {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; the page reads:\n%s", what, within, p.text("main"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clickLive clicks the element sel (CSS) matches in a part of the page the
// live stream re-renders: the dashboard's cards are swapped whenever any
// session changes, and a card may move to another grid (its category set
// by inference, its star), so a click aimed at where the node was can land
// on nothing. The click is the node's own (click()), once htmx has taken
// its form — before that the browser would post the form itself — and in
// one step, so no swap falls between finding the node and clicking it.
func (p *browserPage) clickLive(sel string) {
	p.t.Helper()
	p.clickLiveAfter(sel, "")
}

// clickLiveAfter is clickLive running the JavaScript statement prepare
// (choosing a select's value, say) in the same step, just before the click.
func (p *browserPage) clickLiveAfter(sel, prepare string) {
	p.t.Helper()
	click := fmt.Sprintf(`(() => {
		const e = document.querySelector(%s);
		if (!e || (e.form && e.form.hasAttribute("hx-post") && !e.form["htmx-internal-data"]?.initHash)) return false;
		%s;
		e.click();
		return true;
	})()`, jsString(sel), prepare)
	deadline := time.Now().Add(browserStep)
	for !eval[bool](p, click) {
		if time.Now().After(deadline) {
			p.t.Fatalf("click %s: no such element htmx has taken within %s", sel, browserStep)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// attribute is the attribute name of the element sel (CSS) matches.
func (p *browserPage) attribute(sel, name string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`document.querySelector(%s)?.getAttribute(%s) ?? ""`, jsString(sel), jsString(name)))
}

// writeScreenshot saves the whole page as a small PNG (re-encoded at the
// best compression) at path.
func writeScreenshot(t *testing.T, p *browserPage, path string) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(p.screenshot()))
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&b, img))
	require.Less(t, b.Len(), 512<<10, "a screenshot for the docs stays small")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	t.Logf("screenshot: %s (%d KB)", path, b.Len()>>10)
}

func indexOf(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return -1
}

// cardIDs are the session ids of the dashboard's cards, in order.
func cardIDs(p *browserPage) []int64 {
	p.t.Helper()
	var ids []int64
	for _, s := range eval[[]string](p, `[...document.querySelectorAll("#cards .card")].map(e => e.id)`) {
		var id int64
		_, err := fmt.Sscanf(s, "session-%d", &id)
		require.NoError(p.t, err, s)
		ids = append(ids, id)
	}
	return ids
}

// listedIDs are the ids of a REST list's sessions.
func listedIDs(t *testing.T, body string) []string {
	t.Helper()
	var got struct{ Sessions []map[string]any }
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	var ids []string
	for _, s := range got.Sessions {
		ids = append(ids, fmt.Sprint(s["id"]))
	}
	return ids
}
