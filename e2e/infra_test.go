package e2e_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

// devTemporal is a Temporal dev server of a test's own, persisted in a
// SQLite file, that the test may kill -9 and start again on the same file
// and ports: the crash tests' Temporal (never the shared one, which other
// tests use).
type devTemporal struct {
	t        *testing.T
	bin      string
	db       string
	addr     string // frontend gRPC, host:port
	httpPort string
	log      string
	mu       sync.Mutex
	cmd      *exec.Cmd
}

func temporalCLI(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("TEMPORAL_CLI"); bin != "" {
		return bin
	}
	bin := filepath.Join(repoRoot(t), "bin", "temporal")
	require.NoError(t, devstack.EnsureTemporalCLI(t.Context(), bin, nil))
	return bin
}

// startDevTemporal starts a dev server on free loopback ports with its
// state in a file of the test's temporary directory.
func startDevTemporal(t *testing.T) *devTemporal {
	t.Helper()
	dir := t.TempDir()
	_, httpPort, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	d := &devTemporal{
		t: t, bin: temporalCLI(t), db: filepath.Join(dir, "temporal.db"),
		addr: freeAddr(t), httpPort: httpPort, log: filepath.Join(dir, "temporal.log"),
	}
	t.Cleanup(func() {
		d.kill()
		if t.Failed() {
			b, _ := os.ReadFile(d.log)
			t.Logf("---- temporal dev server log (tail) ----\n%s", tail(b, 3000))
		}
	})
	d.start()
	return d
}

// start launches the server (again) and waits until its default namespace
// answers.
func (d *devTemporal) start() {
	d.t.Helper()
	_, port, err := net.SplitHostPort(d.addr)
	require.NoError(d.t, err)
	logf, err := os.OpenFile(d.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(d.t, err)
	defer logf.Close()
	args := append([]string{"server", "start-dev", "--ip", "127.0.0.1", "--port", port,
		"--http-port", d.httpPort, "--headless", "--log-level", "warn"}, devstack.DevServerArgs(d.db)...)
	cmd := exec.Command(d.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(d.t, cmd.Start())
	d.mu.Lock()
	d.cmd = cmd
	d.mu.Unlock()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	d.waitReady(exited)
}

func (d *devTemporal) waitReady(exited <-chan struct{}) {
	d.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(d.log)
			d.t.Fatalf("the temporal dev server exited during start-up:\n%s", tail(b, 3000))
		default:
		}
		if d.ready() {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("the temporal dev server on %s never answered", d.addr)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (d *devTemporal) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	nc, err := client.NewNamespaceClient(client.Options{HostPort: d.addr, Logger: quietLogger{}})
	if err != nil {
		return false
	}
	defer nc.Close()
	_, err = nc.Describe(ctx, "default")
	return err == nil
}

// kill ends the server and everything in its process group with SIGKILL,
// as a crash of its machine would.
func (d *devTemporal) kill() {
	d.mu.Lock()
	cmd := d.cmd
	d.cmd = nil
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		d.t.Errorf("kill the temporal dev server: %v", err)
	}
	// Its Wait runs in start's goroutine; the port is free once the
	// process is gone.
	require.Eventually(d.t, func() bool { return !alive(cmd.Process.Pid) }, 10*time.Second, 50*time.Millisecond)
}

// quietLogger drops the SDK's logs while a probe waits for the server.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

// devPostgres is a Postgres cluster of a test's own (devstack's private
// cluster, run as the postgres user when the test runs as root), which
// the test may kill -9 and start again. It is durable: with
// synchronous_commit off (devstack's Disposable) a commit is acknowledged
// before its WAL is written, and the postmaster's death loses the last
// few hundred milliseconds of acknowledged commits — a loss Zimmer's
// configuration never risks, which a crash test would then blame on it.
type devPostgres struct {
	t   *testing.T
	dir string
	pg  *devstack.Postgres
}

func startDevPostgres(t *testing.T) *devPostgres {
	t.Helper()
	// The server runs as the postgres user, which must reach its data
	// directory: t.TempDir's folders are private to us.
	base, err := os.MkdirTemp("", "zimmer-e2e-pg-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(base, 0o755))
	d := &devPostgres{t: t, dir: filepath.Join(base, "data")}
	t.Cleanup(func() {
		if err := devstack.StopPostgresAt(d.dir); err != nil {
			t.Logf("stop the test's postgres: %v", err)
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(d.dir, "server.log"))
			t.Logf("---- postgres log (tail) ----\n%s", tail(b, 3000))
		}
		_ = os.RemoveAll(base)
	})
	d.start()
	return d
}

// start starts the cluster (again). After a kill, the dead postmaster's
// backends may hold its shared memory for a moment: the start is retried
// until they are gone.
func (d *devPostgres) start() {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		pg, err := devstack.StartPostgres(context.Background(), devstack.PostgresOptions{DataDir: d.dir, Durability: devstack.Durable})
		if err == nil {
			d.pg = pg
			return
		}
		if time.Now().After(deadline) {
			require.NoError(d.t, err, "start the test's postgres")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (d *devPostgres) adminURL() string { return d.pg.AdminURL() }

// killPostmaster sends SIGKILL to the postmaster alone, as a crash of it
// would; its backends notice and exit by themselves.
func (d *devPostgres) killPostmaster() {
	d.t.Helper()
	b, err := os.ReadFile(filepath.Join(d.dir, "postmaster.pid"))
	require.NoError(d.t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	require.NoError(d.t, err)
	require.NoError(d.t, syscall.Kill(pid, syscall.SIGKILL))
	require.Eventually(d.t, func() bool { return !alive(pid) }, 10*time.Second, 50*time.Millisecond,
		"the postmaster %d outlived SIGKILL", pid)
}

// alive reports whether pid is a process that has not exited: a zombie
// (exited, not yet reaped by its parent) is not.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// hold anything.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}
