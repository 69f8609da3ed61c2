// Command zimmer-dev runs Zimmer's local dev stack: a private Postgres cluster,
// the Temporal dev server, every service and the gateway (`run`), or the same
// infrastructure around `go test` for every go.work module (`test`), for
// the e2e crash tests (`test-chaos`) or for the console's screenshots
// (`screenshots`).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

const usage = `usage: zimmer-dev <command> [args]

commands:
  run                 Postgres + Temporal + all services + gateway, in the foreground (make run)
  test [go test args] every go.work module's tests against private Postgres and Temporal, without
                      the crash tests (make test)
  test-chaos [go test args]
                      the e2e crash tests (kill -9 of parts of the stack) against the same (make test-chaos)
  screenshots [go test args]
                      the console's browser test that takes the screenshots of the dashboard and a
                      session page, written into docs/screenshots (make screenshots; needs chromium)
  db-up               start (or reuse) the make-run Postgres and create the service databases
  db-down             stop the make-run Postgres
  temporal            a headless, in-memory Temporal dev server alone, in the foreground, with the
                      dynamic config every Zimmer dev server runs with (ZIMMER_TEMPORAL_PORT, default
                      a free port): for benchmarks and for one package's tests
  clean               remove bin/ and the data folder, refusing while anything from them runs
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "zimmer-dev:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return errors.New("missing command")
	}
	e, err := newEnv(getenv, stdout)
	if err != nil {
		return err
	}
	switch args[0] {
	case "run":
		return e.runStack(ctx)
	case "test":
		return e.runTests(ctx, args[1:])
	case "test-chaos":
		return e.runChaosTests(ctx, args[1:])
	case "screenshots":
		return e.runScreenshots(ctx, args[1:])
	case "db-up":
		return e.dbUp(ctx)
	case "db-down":
		return e.dbDown()
	case "temporal":
		return e.temporalAlone(ctx)
	case "clean":
		return e.clean()
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stdout, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

// env is what every command needs: where the repository and its data live.
type env struct {
	getenv  func(string) string
	out     io.Writer
	root    string // repository root (holds go.work)
	dataDir string // git-ignored state: clusters, logs, api key
}

func newEnv(getenv func(string) string, stdout io.Writer) (*env, error) {
	e := &env{getenv: getenv, out: &syncWriter{w: stdout}}
	e.root = getenv("ZIMMER_REPO_ROOT")
	if e.root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if e.root, err = devstack.FindRepoRoot(wd); err != nil {
			return nil, err
		}
	}
	e.dataDir = e.get("ZIMMER_DATA_DIR", filepath.Join(e.root, ".data"))
	var err error
	if e.dataDir, err = filepath.Abs(e.dataDir); err != nil {
		return nil, err
	}
	return e, nil
}

// get returns the caller's value for key, or def when unset: the caller's
// environment always wins over our defaults.
func (e *env) get(key, def string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return def
}

func (e *env) say(format string, args ...any) {
	fmt.Fprintf(e.out, "==> "+format+"\n", args...)
}

func (e *env) temporalCLI() string {
	return e.get("TEMPORAL_CLI", filepath.Join(e.root, "bin", "temporal"))
}

func (e *env) pgDataDir() string { return filepath.Join(e.dataDir, "postgres") }

// progress prefixes library progress lines like our own.
func (e *env) progress() io.Writer { return &prefixWriter{prefix: "==> ", w: e.out} }
