package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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

// runTests is `make test`: fresh infrastructure, then one `go test` over
// every go.work module's packages, without the crash tests
// (devstack.CrashTests), which `make test-chaos` runs. One invocation, not
// one per module: go test's -p then schedules the e2e package, which
// mostly waits on the stacks it starts, beside the services' packages
// instead of after them.
func (e *env) runTests(ctx context.Context, args []string) error {
	modules, err := e.modules(ctx)
	if err != nil {
		return err
	}
	flags := append(slices.Clone(testFlags), "-skip", devstack.CrashTestPattern())
	return e.testWithInfra(ctx, modules, flags, args, nil)
}

// runChaosTests is `make test-chaos`: the same fresh infrastructure, then
// the crash tests alone, in the e2e module. ZIMMER_CHAOS=1 overrides a
// ZIMMER_CHAOS=0 left in the caller's environment for hand-run tests.
func (e *env) runChaosTests(ctx context.Context, args []string) error {
	flags := append(slices.Clone(testFlags), chaosTimeout, "-run", devstack.CrashTestPattern())
	return e.testWithInfra(ctx, []string{filepath.Join(e.root, "e2e")}, flags, args,
		map[string]string{"ZIMMER_CHAOS": "1"})
}

// testWithInfra starts a private Postgres and Temporal, then runs one
// `go test flags args` over the packages of modules with the variables the
// tests read (and extra), and says how long it took.
func (e *env) testWithInfra(ctx context.Context, modules, flags, args []string, extra map[string]string) (err error) {
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
	maps.Copy(vars, extra)
	testEnv := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		testEnv = append(testEnv, k+"="+vars[k])
		e.say("export %s=%s", k, vars[k])
	}

	goArgs := append(append([]string{"test"}, flags...), args...)
	for _, dir := range modules {
		rel, err := filepath.Rel(e.root, dir)
		if err != nil {
			return err
		}
		goArgs = append(goArgs, "./"+filepath.ToSlash(rel)+"/...")
	}
	e.say("go %s", strings.Join(goArgs, " "))
	err = e.goTest(ctx, e.root, goArgs, testEnv)
	elapsed := time.Since(start).Round(100 * time.Millisecond)
	fmt.Fprintln(e.out)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted after %s", elapsed)
	case err != nil:
		return fmt.Errorf("tests failed in %s (the FAIL lines above say which): %w", elapsed, err)
	}
	fmt.Fprintf(e.out, "all %d modules' tests passed in %s\n", len(modules), elapsed)
	return nil
}

// goTest runs go test in its own process group so that Ctrl-C reaches us
// first and we stop it (and its test binaries) before tearing down the
// infrastructure they use.
func (e *env) goTest(ctx context.Context, dir string, args, environ []string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = environ
	cmd.Stdout, cmd.Stderr = e.out, e.out
	p, err := devstack.StartProcess("go test", cmd)
	if err != nil {
		return err
	}
	select {
	case <-p.Done():
		return p.Err()
	case <-ctx.Done():
		_ = p.Stop(devstack.DefaultGrace)
		return ctx.Err()
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
		e.say("postgres: stopping test cluster")
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
	}, nil
}
