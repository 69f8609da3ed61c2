package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

// testFlags are the house defaults for `make test`; extra args come after
// them, so a caller's -count, -p, -timeout or -skip wins. The timeout is a
// quarter of go test's default: one deadlocked package must not eat the
// whole CI budget.
var testFlags = []string{"-race", "-count=1", "-shuffle=on", "-p", "2", "-timeout=15m"}

// chaosTimeout bounds `make test-chaos`: its tests run stacks for minutes
// each, two at a time.
const chaosTimeout = "-timeout=30m"

// runTests is `make test`: fresh infrastructure, then `go test` in every
// go.work module, one module at a time (the machine has two cores; -p 2
// already fills them), without the crash tests (devstack.CrashTests), which
// `make test-chaos` runs.
func (e *env) runTests(ctx context.Context, args []string) error {
	modules, err := e.modules(ctx)
	if err != nil {
		return err
	}
	browser, skipped, err := e.browserForTests()
	if err != nil {
		return err
	}
	flags := append(slices.Clone(testFlags), "-skip", devstack.CrashTestPattern())
	return e.testWithInfra(ctx, modules, flags, args, browser, skipped)
}

// browserForTests finds the browser the console's browser tests drive
// and returns the variables that hand it to them, with RequireBrowserEnv
// set so that, given a browser, nothing there can skip. Without one the
// tests skip, and skipped says so, for the summary to repeat loudly;
// unless RequireBrowserEnv is already 1 (CI), when the run stops before it
// starts.
func (e *env) browserForTests() (vars map[string]string, skipped string, err error) {
	path, err := devstack.FindBrowser(e.getenv)
	switch {
	case err == nil:
		e.say("browser: %s (the console's browser tests)", path)
		return map[string]string{devstack.BrowserEnv: path, devstack.RequireBrowserEnv: "1"}, "", nil
	case devstack.BrowserMissing(e.getenv, err):
		skipped = fmt.Sprintf("the console's browser tests (e2e %s) were SKIPPED: %v", devstack.BrowserTest, err)
		e.say("%s", skipped)
		return nil, skipped, nil
	}
	return nil, "", fmt.Errorf("the console's browser tests need a browser (%s=1): %w", devstack.RequireBrowserEnv, err)
}

// runScreenshots is `make screenshots`: the browser tests' screenshot of
// the dashboard and of a session page, written into docs/screenshots for
// the README and docs/console.md. It needs a browser.
func (e *env) runScreenshots(ctx context.Context, args []string) error {
	path, err := devstack.FindBrowser(e.getenv)
	if err != nil {
		return fmt.Errorf("make screenshots needs a browser: %w", err)
	}
	dir := filepath.Join(e.root, "docs", "screenshots")
	flags := append(slices.Clone(testFlags), "-run", "^"+devstack.BrowserTest+"$/^screenshots$")
	return e.testWithInfra(ctx, []string{filepath.Join(e.root, "e2e")}, flags, args, map[string]string{
		devstack.BrowserEnv: path, devstack.RequireBrowserEnv: "1", devstack.ScreenshotsDirEnv: dir,
	}, "")
}

// runChaosTests is `make test-chaos`: the same fresh infrastructure, then
// the crash tests alone, in the e2e module. ZIMMER_CHAOS=1 overrides a
// ZIMMER_CHAOS=0 left in the caller's environment for hand-run tests.
func (e *env) runChaosTests(ctx context.Context, args []string) error {
	flags := append(slices.Clone(testFlags), chaosTimeout, "-run", devstack.CrashTestPattern())
	return e.testWithInfra(ctx, []string{filepath.Join(e.root, "e2e")}, flags, args,
		map[string]string{"ZIMMER_CHAOS": "1"}, "")
}

// testWithInfra starts a private Postgres and Temporal, then runs
// `go test flags args ./...` in each module with the variables the tests
// read (and extra), and prints a summary, ending with skipped (what did not
// run, and why) when it is not empty, whatever the outcome.
func (e *env) testWithInfra(ctx context.Context, modules, flags, args []string, extra map[string]string, skipped string) (err error) {
	start := time.Now()
	unlock, err := devstack.Lock(filepath.Join(e.dataDir, "test.lock"), false)
	if err != nil {
		return fmt.Errorf("is another `make test` active? %w", err)
	}
	defer unlock()

	dbURL, stopPG, err := e.testPostgres(ctx)
	if err != nil {
		return err
	}
	defer stopPG()
	temporalAddr, stopTemporal, err := e.testTemporal(ctx)
	if err != nil {
		return err
	}
	defer stopTemporal()

	vars := map[string]string{
		"ZIMMER_TEST_DATABASE_URL":     dbURL,
		"ZIMMER_TEST_TEMPORAL_ADDRESS": temporalAddr,
		"ZIMMER_REQUIRE_DB":            "1",
		"ZIMMER_REQUIRE_TEMPORAL":      "1",
		"TEMPORAL_CLI":                 e.temporalCLI(),
		"ZIMMER_REPO_ROOT":             e.root,
	}
	if e.getenv("GORACE") == "" {
		vars["GORACE"] = raceOptions
	}
	maps.Copy(vars, extra)
	testEnv := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		testEnv = append(testEnv, k+"="+vars[k])
		e.say("export %s=%s", k, vars[k])
	}

	goArgs := append(append(append([]string{"test"}, flags...), args...), "./...")
	timesFile := filepath.Join(e.dataDir, "test-times")
	results := e.testModules(ctx, orderModules(modules, readTimes(timesFile, e.root)), goArgs, testEnv)
	writeTimes(timesFile, results)

	failed := printSummary(e.out, results, skipped)
	elapsed := time.Since(start).Round(100 * time.Millisecond)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted after %s", elapsed)
	case len(failed) > 0:
		return fmt.Errorf("%d of %d modules failed in %s: %s", len(failed), len(modules), elapsed, strings.Join(failed, ", "))
	}
	fmt.Fprintf(e.out, "all %d modules passed in %s\n", len(modules), elapsed)
	return nil
}

// raceOptions is GORACE for the tests unless the caller sets it. The race
// runtime sleeps a second before every test binary exits
// (atexit_sleep_ms, default 1000), for goroutines still running to
// report: with a hundred test packages that was over a minute of make
// test. A race is reported when it happens, during the tests; what a
// tenth of a second after the last test still finds is reported too.
const raceOptions = "atexit_sleep_ms=100"

// testLanes is how many modules' `go test` run at once. The e2e module
// spends most of its time waiting on the stacks it starts, so it runs in
// one lane beside the other modules, which take turns in the second,
// instead of after all of them (README, "Tests": the time it takes).
const testLanes = 2

// testModules runs `go test` in each module, testLanes at a time, in the
// order given. Each module's output is held and printed whole when it
// ends, so two modules' failures never interleave.
func (e *env) testModules(ctx context.Context, modules, goArgs, environ []string) []moduleResult {
	results := make([]moduleResult, len(modules))
	next := make(chan int, len(modules))
	for i := range modules {
		next <- i
	}
	close(next)
	var mu sync.Mutex // orders whole outputs on e.out
	var wg sync.WaitGroup
	for range min(testLanes, len(modules)) {
		wg.Go(func() {
			for i := range next {
				if ctx.Err() != nil {
					results[i] = moduleResult{rel: rel(e.root, modules[i]), err: ctx.Err()}
					continue
				}
				r := rel(e.root, modules[i])
				args := moduleArgs(modules[i], goArgs)
				mu.Lock()
				e.say("go %s   (in %s)", strings.Join(args, " "), r)
				mu.Unlock()
				var out bytes.Buffer
				t0 := time.Now()
				cpu, err := e.goTest(ctx, modules[i], args, environ, &out)
				results[i] = moduleResult{r, err, time.Since(t0), cpu}
				mu.Lock()
				_, _ = e.out.Write(out.Bytes())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return results
}

// e2eParallel is the e2e module's -parallel: its tests spend most of their
// time waiting on the stacks they start (a pause's debounce, a sweep's
// interval, an agent's turn), so two at a time, go test's default on two
// cores, left the CPU idle: the e2e package used a quarter of the machine
// over its run (README, "Tests"). A flag in the caller's args still wins.
const e2eParallel = "-parallel=4"

// moduleArgs are goArgs for the module in dir: the e2e module's carry
// e2eParallel before the caller's flags.
func moduleArgs(dir string, goArgs []string) []string {
	if laneRank(dir) != 0 {
		return goArgs
	}
	return append([]string{goArgs[0], e2eParallel}, goArgs[1:]...)
}

// orderModules is the order the lanes take modules in: e2e first, then
// the longest by the last run's times (last, by module directory), those
// without a time before those with one. Longest first, the lanes end
// together instead of one running the slowest module (runner's, 159 s)
// alone at the end.
func orderModules(modules []string, last map[string]time.Duration) []string {
	modules = slices.Clone(modules)
	slices.SortStableFunc(modules, func(a, b string) int {
		if c := cmp.Compare(laneRank(a), laneRank(b)); c != 0 {
			return c
		}
		ta, oka := last[a]
		tb, okb := last[b]
		if oka != okb {
			if !oka {
				return -1
			}
			return 1
		}
		return cmp.Compare(tb, ta)
	})
	return modules
}

// readTimes reads the module times writeTimes kept (module directory,
// relative to root, and seconds, a line each); a missing or unreadable
// file is no times.
func readTimes(file, root string) map[string]time.Duration {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	times := map[string]time.Duration{}
	for line := range strings.Lines(string(b)) {
		var mod string
		var secs float64
		if _, err := fmt.Sscanf(line, "%s %g", &mod, &secs); err == nil {
			times[filepath.Join(root, mod)] = time.Duration(secs * float64(time.Second))
		}
	}
	return times
}

// writeTimes keeps the modules' times for the next run's order; the ones
// stopped early are left out, and a file that cannot be written only
// costs the order.
func writeTimes(file string, results []moduleResult) {
	var b strings.Builder
	for _, r := range results {
		if r.elapsed > 0 && !errors.Is(r.err, context.Canceled) {
			fmt.Fprintf(&b, "%s %.1f\n", r.rel, r.elapsed.Seconds())
		}
	}
	_ = os.WriteFile(file, []byte(b.String()), 0o644)
}

// laneRank puts the e2e module before the others.
func laneRank(dir string) int {
	if filepath.Base(dir) == "e2e" {
		return 0
	}
	return 1
}

func rel(root, dir string) string {
	r, _ := filepath.Rel(root, dir)
	return r
}

// moduleResult is how one module's go test ended.
type moduleResult struct {
	rel     string
	err     error
	elapsed time.Duration
	// cpu is the processor time of go test and everything it waited for
	// (compiles, test binaries, the stacks they ran): with two lanes on two
	// cores, the sum over modules is what bounds the run's length.
	cpu time.Duration
}

// printSummary prints a line per module and, when skipped is not empty,
// a banner saying what did not run and why, whatever the outcome; it
// returns the modules that failed.
func printSummary(w io.Writer, results []moduleResult, skipped string) (failed []string) {
	fmt.Fprintln(w)
	var cpu time.Duration
	for _, r := range results {
		cpu += r.cpu
		status := "ok  "
		switch {
		case errors.Is(r.err, context.Canceled):
			status = "STOP"
		case r.err != nil:
			status = "FAIL"
			failed = append(failed, r.rel)
		}
		fmt.Fprintf(w, "%s  %-28s %6.1fs  cpu %6.1fs\n", status, r.rel, r.elapsed.Seconds(), r.cpu.Seconds())
	}
	fmt.Fprintf(w, "      %-28s         cpu %6.1fs\n", "(all modules)", cpu.Seconds())
	if skipped != "" {
		printSkipped(w, skipped)
	}
	return failed
}

// goTest runs go test in its own process group so that Ctrl-C reaches us
// first and we stop it (and its test binaries) before tearing down the
// infrastructure they use.
func (e *env) goTest(ctx context.Context, dir string, args, environ []string, out io.Writer) (cpu time.Duration, err error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = environ
	cmd.Stdout, cmd.Stderr = out, out
	p, err := devstack.StartProcess("go test", cmd)
	if err != nil {
		return 0, err
	}
	select {
	case <-p.Done():
		return p.CPU(), p.Err()
	case <-ctx.Done():
		_ = p.Stop(devstack.DefaultGrace)
		return p.CPU(), ctx.Err()
	}
}

// modules lists the go.work modules, as the go command sees them from the root.
func (e *env) modules(ctx context.Context) ([]string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}")
	cmd.Dir = e.root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list go.work modules: %w", err)
	}
	return strings.Fields(string(out)), nil
}

func (e *env) testPostgres(ctx context.Context) (url string, stop func(), err error) {
	for _, key := range []string{"ZIMMER_TEST_DATABASE_URL", "ZIMMER_DATABASE_URL"} {
		if url := e.getenv(key); url != "" {
			e.say("postgres: using external server from %s", key)
			pg, err := devstack.ConnectPostgres(ctx, url)
			if err != nil {
				return "", nil, err
			}
			return pg.AdminURL(), func() {}, nil
		}
	}
	// Always a fresh cluster: tests must not depend on leftovers. A cluster
	// left running by a killed run is stopped before its files are removed.
	dir := filepath.Join(e.dataDir, "test-pg")
	if err := devstack.StopPostgresAt(dir); err != nil {
		return "", nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", nil, err
	}
	// Thrown away after every run, so it may trade crash safety for speed.
	pg, err := devstack.StartPostgres(ctx, devstack.PostgresOptions{DataDir: dir, Durability: devstack.Disposable, Progress: e.progress()})
	if err != nil {
		return "", nil, err
	}
	return pg.AdminURL(), func() {
		cpu, err := pg.CPU()
		if err != nil {
			e.say("postgres: cannot read its CPU time: %v", err)
		}
		e.say("postgres: stopping test cluster (it used %.1fs of CPU)", cpu.Seconds())
		if err := pg.Stop(); err != nil {
			e.say("%v", err)
		}
	}, nil
}

func (e *env) testTemporal(ctx context.Context) (addr string, stop func(), err error) {
	for _, key := range []string{"ZIMMER_TEST_TEMPORAL_ADDRESS", "TEMPORAL_ADDRESS"} {
		if addr := e.getenv(key); addr != "" {
			e.say("temporal: using external server %s from %s", addr, key)
			return addr, func() {}, nil
		}
	}
	t, err := devstack.StartTemporal(ctx, devstack.TemporalOptions{
		Bin:      e.temporalCLI(),
		Headless: true, // in memory, free port: tests never collide with `make run`
		LogFile:  filepath.Join(e.dataDir, "logs", "test-temporal.log"),
		Progress: e.progress(),
	})
	if err != nil {
		return "", nil, err
	}
	e.say("temporal: dev server ready on %s", t.Address())
	return t.Address(), func() {
		e.say("temporal: stopping dev server")
		_ = t.Stop()
		e.say("temporal: the dev server used %.1fs of CPU", t.CPU().Seconds())
	}, nil
}
