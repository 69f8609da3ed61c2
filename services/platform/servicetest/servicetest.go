// Package servicetest holds what every service's component and Temporal
// tests share: a test configuration, running the service in the background,
// and the assertions that a service serves (health, reflection), owns its
// schema (tables, reversible migrations, constraints) and runs a Temporal
// worker on its own task queue.
//
// Databases come from pgtest (ZIMMER_TEST_DATABASE_URL, ZIMMER_REQUIRE_DB).
// Temporal tests read ZIMMER_TEST_TEMPORAL_ADDRESS and skip without it,
// unless ZIMMER_REQUIRE_TEMPORAL=1 (as in `make test` and CI), where a
// missing server is a failure.
package servicetest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// Timeout bounds every wait in this package. It is generous because tests
// share a small machine with compilers and other test binaries; a healthy
// service answers in milliseconds.
const Timeout = 30 * time.Second

// The credentials every Config carries, as `make run` wires them: an
// operator key, an admin key and the internal token (docs/security.md).
// Dial with DialOperator, DialAdmin or DialAsService.
const (
	OperatorKey   = "test-operator-key-0123456789"
	AdminKey      = "test-admin-key-0123456789"
	InternalToken = "test-internal-token-0123456789"
)

// Config is the configuration of a service under test: gRPC on a free
// loopback port, a fresh database migrated with sets (pgtest.NewDatabase,
// dropped when the test ends), the test credentials and no Temporal
// worker. Set TemporalAddress (from TemporalAddress) to run one.
func Config(t testing.TB, sets ...pgdb.MigrationSet) host.Config {
	t.Helper()
	return host.Config{
		GRPCAddr:          "127.0.0.1:0",
		DatabaseURL:       pgtest.NewDatabase(t, sets...),
		TemporalNamespace: "default",
		APIKeys:           OperatorKey,
		AdminAPIKeys:      AdminKey,
		InternalToken:     InternalToken,
		ShutdownGrace:     5 * time.Second,
	}
}

// New builds a service under test with its composition root's
// New(ctx, cfg, logger), requiring success, and closes it when the test
// ends (after a RunInBackground started later has stopped it). The service
// logs nowhere: assertions, not logs, say what went wrong.
func New[C any, S interface{ Close() }](t testing.TB, newFunc func(context.Context, C, *slog.Logger) (S, error), cfg C) S {
	t.Helper()
	svc, err := newFunc(context.Background(), cfg, slogx.Discard())
	require.NoError(t, err, "build the service")
	t.Cleanup(svc.Close)
	return svc
}

// Getenv returns a getenv func over vars, for driving a command's
// run(ctx, args, getenv, stdout) without touching the process environment.
func Getenv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// RunInBackground calls run in a goroutine with a context that stop cancels.
// stop then waits (up to Timeout) for run to return and requires that it
// returned nil: cancelling the context is a clean shutdown, not an error.
// stop is idempotent and also runs at cleanup, so a test that fails early
// never leaks a running service. run returning before stop is reported as a
// test error: a service that quits on its own has failed.
func RunInBackground(t testing.TB, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := run(ctx)
		if ctx.Err() == nil {
			// Safe: cleanup waits on done, so the test is still running.
			t.Errorf("run returned before it was stopped: %v", err)
		}
		done <- err
	}()
	var once sync.Once
	stop = func() {
		t.Helper()
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err, "run must return nil when its context is cancelled")
			case <-time.After(Timeout):
				t.Fatalf("run did not return within %s of its context being cancelled", Timeout)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// AssertServesUntilCancelled is every service's component test: built
// without Temporal (so no worker), h serves fullServiceName with health and
// reflection, owns tables (plus the platform's inbox and outbox), and stops
// cleanly when its context ends.
func AssertServesUntilCancelled(t testing.TB, h *host.Host, fullServiceName string, tables ...string) {
	t.Helper()
	require.Nil(t, h.Temporal, "no Temporal address, no worker")
	stop := RunInBackground(t, h.Run)
	AssertServing(t, h.Addr(), fullServiceName)
	AssertTables(t, h.Pool, append(tables, "inbox_events", "outbox_messages")...)
	stop()
	AssertStopped(t, h.Addr())
}

// AssertWorkerPolls runs h (built with a Temporal address) and requires its
// worker to answer the probe on service's task queue.
func AssertWorkerPolls(t testing.TB, h *host.Host, service string) {
	t.Helper()
	RunInBackground(t, h.Run)
	AssertWorkerAnswers(t, h.Temporal, service)
}
