package devstack

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// The console's browser tests (e2e) drive a real, headless Chromium:
// Debian's chromium package, which .ci/run installs when it is missing.
// make test finds it here and hands it to the tests; what happens when
// there is none is decided here too (BrowserMissing), so make test, CI and
// a hand-run go test agree.
const (
	// BrowserEnv names the browser binary, instead of looking for one on
	// PATH.
	BrowserEnv = "ZIMMER_BROWSER"
	// RequireBrowserEnv=1 turns a missing browser from a skip into a
	// failure: .ci/run sets it, and make test sets it for the tests
	// whenever it found a browser.
	RequireBrowserEnv = "ZIMMER_REQUIRE_BROWSER"
	// BrowserInstall is how a Debian machine gets the browser.
	BrowserInstall = "apt-get install -y chromium"
	// BrowserTest is the e2e test that drives the console in the browser
	// (it checks that this is its name); its subtest "screenshots" writes
	// into ScreenshotsDirEnv's directory when it is set (make screenshots:
	// docs/screenshots), else into a temporary one.
	BrowserTest       = "TestConsoleInABrowser"
	ScreenshotsDirEnv = "ZIMMER_SCREENSHOTS_DIR"
)

// browserCommands are the names FindBrowser looks for on PATH: Debian's
// package installs chromium; Ubuntu's calls it chromium-browser.
var browserCommands = []string{"chromium", "chromium-browser"}

// ErrNoBrowser is FindBrowser's answer when PATH holds no browser.
var ErrNoBrowser = errors.New("no browser found")

// FindBrowser returns the browser the console's browser tests drive:
// $ZIMMER_BROWSER when set (an error when it names nothing runnable: a
// browser asked for by name is never skipped), else the first of
// browserCommands in $PATH, else ErrNoBrowser.
func FindBrowser(getenv func(string) string) (string, error) {
	if named := getenv(BrowserEnv); named != "" {
		path, err := exec.LookPath(named)
		if err != nil {
			return "", fmt.Errorf("%s=%s names no browser that can be run: %w", BrowserEnv, named, err)
		}
		return path, nil
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			continue // as exec.LookPath: never the current directory's files
		}
		for _, name := range browserCommands {
			// A path with a slash is checked as it is, not looked up.
			if path, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
				return path, nil
			}
		}
	}
	return "", fmt.Errorf("%w: none of %s is on PATH and %s is unset; install Debian's chromium (%s)",
		ErrNoBrowser, strings.Join(browserCommands, ", "), BrowserEnv, BrowserInstall)
}

// BrowserMissing says what a missing browser means for the browser tests:
// skip them (with why, which make test repeats loudly in its summary), or,
// when RequireBrowserEnv is 1 or a browser was named, fail. err is
// FindBrowser's.
func BrowserMissing(getenv func(string) string, err error) (skip bool) {
	return errors.Is(err, ErrNoBrowser) && getenv(RequireBrowserEnv) != "1"
}
