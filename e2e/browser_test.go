package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

// The console in a real browser. One headless Chromium serves the whole
// test binary (starting one costs about a second and 100 MB): Debian's
// chromium, found by devstack.FindBrowser, started by chromedp over a pipe
// (no debugging port is opened), in a process group of its own that
// TestMain ends by its pid. Its profile directory is a private temporary
// one, removed with it; each test gets a browser context of its own (an
// off-the-record profile: cookies, storage and cache apart from every other
// test's), so tests share the process and nothing else, and may run in
// parallel. The browser resolves no host name (host-resolver-rules): it
// reaches the test's gateway on 127.0.0.1 and nothing else.
//
// Without a browser the tests skip, saying why, unless
// ZIMMER_REQUIRE_BROWSER=1 (CI, and make test whenever it found one), when
// they fail; make test repeats a skip loudly in its summary.

// browserStep bounds one step of a browser test (a page load, a click and
// what it loads), so a page that never comes fails the test with where it
// was, rather than hanging it.
const browserStep = 30 * time.Second

var chromium struct {
	once sync.Once
	err  error
	// ctx is the browser's first tab; chromedp.NewContext(ctx) opens
	// another in the same browser.
	ctx     context.Context
	cancel  func()
	pid     int
	profile string
}

// sharedBrowser is the test binary's browser, started on first use; it
// skips or fails t when there is none (devstack.BrowserMissing).
func sharedBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := devstack.FindBrowser(os.Getenv)
	if err != nil {
		if devstack.BrowserMissing(os.Getenv, err) {
			t.Skipf("%v (%s=1 makes this a failure; make test sets it when it finds a browser)", err, devstack.RequireBrowserEnv)
		}
		t.Fatal(err)
	}
	chromium.once.Do(func() { chromium.err = startChromium(path) })
	require.NoError(t, chromium.err)
	return chromium.ctx
}

func startChromium(path string) error {
	profile, err := os.MkdirTemp("", "zimmer-e2e-chromium-")
	if err != nil {
		return err
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		// The sandbox needs user namespaces, which CI's root and most
		// containers lack; this browser only ever loads the test's own
		// console on loopback.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 800),
		// Its own process group, so that ending it by its pid ends its
		// renderers too; and killed with the test binary.
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		}),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	chromium.ctx, chromium.profile = ctx, profile
	chromium.cancel = func() { cancelCtx(); cancelAlloc() }
	// The first Run starts the browser; its context must be the tab's own
	// (a deadline's end would close the tab), so a timer bounds it.
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx) }()
	select {
	case err = <-done:
	case <-time.After(browserStep):
		err = fmt.Errorf("the browser did not start within %s", browserStep)
	}
	if c := chromedp.FromContext(ctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		chromium.pid = c.Browser.Process().Pid
	}
	if err != nil {
		stopChromium()
		return fmt.Errorf("start %s: %w", path, err)
	}
	return nil
}

// stopChromium closes the browser and then ends its process group by its
// pid, whatever is left of it, and removes its profile.
func stopChromium() {
	if chromium.cancel == nil {
		return
	}
	chromium.cancel()
	if chromium.pid > 0 {
		if err := syscall.Kill(-chromium.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			fmt.Fprintf(os.Stderr, "end the browser (pid %d): %v\n", chromium.pid, err)
		}
	}
	_ = os.RemoveAll(chromium.profile)
}

// browserPage is one test's tab on the console, in a browser context of its
// own. Its methods fail the test on any error, so a test reads as what a
// person does.
type browserPage struct {
	t    *testing.T
	ctx  context.Context
	base string // the gateway, http://127.0.0.1:port

	mu sync.Mutex
	// dialogs are the JavaScript dialogs the page opened (alert, confirm,
	// prompt), dismissed at once; exceptions, the uncaught script errors.
	// The console has no use for either.
	dialogs, exceptions []string
}

func newBrowserPage(t *testing.T, base string) *browserPage {
	t.Helper()
	ctx, cancel := chromedp.NewContext(sharedBrowser(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &browserPage{t: t, ctx: ctx, base: base}
	// The tab opens on this first call, which has no deadline of its own
	// (its end would close the tab). Focus emulation: a tab that is not
	// the browser's front one still takes focus, as keyboard tests need.
	done := make(chan error, 1)
	go func() {
		_, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err, "open a tab")
	case <-time.After(browserStep):
		t.Fatalf("no tab opened within %s", browserStep)
	}
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			p.note(&p.dialogs, ev.Message)
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
		}
	}()
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			if d.Exception != nil {
				p.note(&p.exceptions, d.Text+" "+d.Exception.Description)
			} else {
				p.note(&p.exceptions, d.Text)
			}
		}
	}()
	return p
}

func (p *browserPage) note(list *[]string, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*list = append(*list, s)
}

// do performs actions that load no page.
func (p *browserPage) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserStep)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, actions...))
}

// load performs actions that load a page (a navigation, a link followed, a
// form submitted) and returns the HTTP status the page came with, after
// any redirect.
func (p *browserPage) load(actions ...chromedp.Action[chromedp.Void]) int64 {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserStep)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, actions...)
	require.NoError(p.t, err)
	require.NotNil(p.t, resp, "no page was loaded")
	return resp.Status
}

// open loads path (/console/…) as if typed into the address bar.
func (p *browserPage) open(path string) int64 {
	p.t.Helper()
	return p.load(chromedp.Navigate(p.base + path))
}

// click clicks the element sel (CSS) matches and waits for the page it
// loads.
func (p *browserPage) click(sel string) int64 {
	p.t.Helper()
	return p.load(chromedp.Click(chromedp.CSS(sel)))
}

// typeInto types text into the field sel (CSS) matches, as keystrokes.
func (p *browserPage) typeInto(sel, text string) {
	p.t.Helper()
	p.do(chromedp.SendKeys(chromedp.CSS(sel), text))
}

// setValue sets the value of the form field sel (CSS) matches, as a
// script in the page would (a hidden field cannot be typed into).
func (p *browserPage) setValue(sel, value string) {
	p.t.Helper()
	got := eval[string](p, fmt.Sprintf(`document.querySelector(%s).value = %s`, jsString(sel), jsString(value)))
	require.Equal(p.t, value, got)
}

// signIn fills the sign-in form with user and password and sends it,
// returning the status of the page it leads to.
func (p *browserPage) signIn(user, password string) int64 {
	p.t.Helper()
	require.EqualValues(p.t, 200, p.open("/console/login"))
	p.typeInto("#user", user)
	p.typeInto("#password", password)
	return p.click(`form.login button[type="submit"]`)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](p *browserPage, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserStep)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(p.t, err, expr)
	return v
}

// path is the path of the page shown.
func (p *browserPage) path() string {
	p.t.Helper()
	u, err := url.Parse(eval[string](p, `location.href`))
	require.NoError(p.t, err)
	return u.Path
}

// text is what a person reads in the first element sel (CSS) matches (""
// when none does).
func (p *browserPage) text(sel string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`document.querySelector(%s)?.innerText ?? ""`, jsString(sel)))
}

// count is how many elements sel (CSS) matches.
func (p *browserPage) count(sel string) int {
	p.t.Helper()
	return eval[int](p, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(sel)))
}

// value is the value of the form field sel (CSS) matches.
func (p *browserPage) value(sel string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`document.querySelector(%s).value`, jsString(sel)))
}

// focused describes the element that has the keyboard's focus.
func (p *browserPage) focused() string {
	p.t.Helper()
	return eval[string](p, `(`+describeElementJS+`)(document.activeElement)`)
}

// describeElementJS names an element the way the focus-order assertions
// read it: its tag, then its id, its name (and a checkbox's value), or its
// words.
const describeElementJS = `function(e) {
	if (!e || e === document.body) return "body";
	const tag = e.tagName.toLowerCase();
	if (e.id) return tag + "#" + e.id;
	if (e.name) return tag + "[" + e.name + (e.type === "checkbox" ? "=" + e.value : "") + "]";
	return tag + " " + (e.innerText || e.value || "").trim().split("\n")[0];
}`

// focusOrder is every element a person can reach with Tab, in the page's
// reading order, described as focused describes them.
func (p *browserPage) focusOrder() []string {
	p.t.Helper()
	return eval[[]string](p, `[...document.querySelectorAll('a[href], button, input:not([type="hidden"]), textarea, select, summary, [tabindex]')]
		.filter(e => !e.disabled && e.tabIndex >= 0 && e.checkVisibility())
		.map(`+describeElementJS+`)`)
}

// unnamedControls lists the controls the page's accessibility tree gives
// no name, as a screen reader meets them: a field without a label, a
// button or a link without words.
func (p *browserPage) unnamedControls() []string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserStep)
	defer cancel()
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	require.NoError(p.t, err)
	var unnamed []string
	for _, n := range tree.Nodes {
		if n.Ignored {
			continue
		}
		switch role := axString(n.Role); role {
		case "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "button", "link":
			if strings.TrimSpace(axString(n.Name)) == "" {
				unnamed = append(unnamed, fmt.Sprintf("a %s (DOM node %d)", role, n.BackendDOMNodeID))
			}
		}
	}
	return unnamed
}

func axString(v *accessibility.Value) string {
	if v == nil {
		return ""
	}
	var s string
	_ = json.Unmarshal(v.Value, &s)
	return s
}

// horizontalOverflow is how many CSS pixels the page is wider than its
// viewport: more than 0 means the person has to scroll sideways.
func (p *browserPage) horizontalOverflow() int {
	p.t.Helper()
	return eval[int](p, `document.documentElement.scrollWidth - document.documentElement.clientWidth`)
}

// screenshot is a PNG of the whole page.
func (p *browserPage) screenshot() []byte {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserStep)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	require.NoError(p.t, err)
	return b
}

// requireNothingRan fails the test when the page opened a dialog, threw,
// or holds an element or a global that markup typed into a field would
// have made (the markup test's payload).
func (p *browserPage) requireNothingRan(where string) {
	p.t.Helper()
	require.Empty(p.t, eval[string](p, `String(window.__zimmerXSS ?? "")`), "%s: script typed into a field ran", where)
	require.Zero(p.t, p.count("[data-zimmer-xss]"), "%s: markup typed into a field became an element", where)
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Empty(p.t, p.dialogs, "%s: the page opened a dialog", where)
	require.Empty(p.t, p.exceptions, "%s: a script threw", where)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}
