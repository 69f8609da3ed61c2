package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// TemporalCLIVersion is the temporal CLI built into bin/ when it is missing.
const TemporalCLIVersion = "v1.5.1"

// DevServerDynamicConfig is the dynamic config of every Temporal dev server
// Zimmer starts (make run's, make test's, the e2e stacks' and crash tests',
// zimmer-dev temporal's for the benchmark recipes), applied by
// DevServerArgs; a server on a SQLite file keeps the loads' default rate
// (fileKeepsDefault). Why each value, measured, and what a real cluster
// needs instead: docs/temporal.md.
var DevServerDynamicConfig = map[string]string{
	// The history service loads queue tasks through a limiter of 20 loads a
	// second per shard (burst 20), and the dev server has one shard for
	// everything: past the burst every hop (workflow task, activity task)
	// waited 40–46 ms for the next token, and 1,000 timers due together
	// trickled out over half a minute.
	transferLoads: "1000",
	timerLoads:    "1000",
	// With the limiter gone, about 1 % of tasks started ~2 s late: a backlog
	// forwarded between the default four task-queue partitions. One server
	// gains nothing from partitions.
	"matching.numTaskqueueReadPartitions":  "1",
	"matching.numTaskqueueWritePartitions": "1",
}

const (
	transferLoads = "history.transferProcessorMaxPollRPS"
	timerLoads    = "history.timerProcessorMaxPollRPS"
)

// A server on a SQLite file keeps the limiter's default rate: without it,
// the queues' loads (each a query on the file's one connection) starved
// its fsync'd commits under a burst until persistence timed out and
// nothing moved — in the crash tests, 100 sessions at once, with the
// default journal and with a write-ahead log alike (docs/temporal.md).
var fileKeepsDefault = []string{transferLoads, timerLoads}

// devServerSQLitePragmas are the journal settings of a dev server on a
// SQLite file: a write-ahead log costs one fsync a commit where the default
// rollback journal costs several, and synchronous=full still takes it
// before a commit is acknowledged, so a killed server — or a machine losing
// power — loses nothing it acknowledged.
var devServerSQLitePragmas = []string{"journal_mode=wal", "synchronous=full"}

// DevServerArgs are the `temporal server start-dev` flags that apply
// DevServerDynamicConfig, in a stable order, and, when dbFile is not empty,
// keep the server's state in that SQLite file with devServerSQLitePragmas
// and without the keys of fileKeepsDefault.
func DevServerArgs(dbFile string) []string {
	config := maps.Clone(DevServerDynamicConfig)
	if dbFile != "" {
		for _, k := range fileKeepsDefault {
			delete(config, k)
		}
	}
	var args []string
	for _, k := range slices.Sorted(maps.Keys(config)) {
		args = append(args, "--dynamic-config-value", k+"="+config[k])
	}
	if dbFile != "" {
		args = append(args, "--db-filename", dbFile)
		for _, p := range devServerSQLitePragmas {
			args = append(args, "--sqlite-pragma", p)
		}
	}
	return args
}

// TemporalOptions configures StartTemporal.
type TemporalOptions struct {
	// Bin is the temporal CLI; built with `go install` when missing.
	Bin string
	// Port is the frontend gRPC port; 0 picks a free one.
	Port int
	// UIPort is the Web UI port; 0 picks a free one. Ignored when Headless.
	UIPort   int
	Headless bool
	// DBFile is the SQLite file that keeps state across restarts; empty keeps it in memory.
	DBFile string
	// Namespace is created at start and checked for readiness; default "default".
	Namespace string
	// LogFile receives the server's output; empty discards it.
	LogFile string
	// Progress receives human-readable progress lines; nil discards them.
	Progress io.Writer
}

// Temporal is a reachable Temporal frontend: a dev server we started, or an external one.
type Temporal struct {
	address string
	uiURL   string
	proc    *Process // nil for an external server
}

// ConnectTemporal uses an external server at address (host:port); Stop is a no-op for it.
func ConnectTemporal(ctx context.Context, address string) (*Temporal, error) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, fmt.Errorf("connect to external temporal: %w", err)
	}
	_ = conn.Close()
	return &Temporal{address: address}, nil
}

// StartTemporal runs `temporal server start-dev` in its own process group and
// waits until the frontend answers for the namespace.
func StartTemporal(ctx context.Context, opts TemporalOptions) (*Temporal, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if err := EnsureTemporalCLI(ctx, opts.Bin, progress); err != nil {
		return nil, err
	}
	var err error
	if opts.Port == 0 {
		if opts.Port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	args := []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(opts.Port),
		"--namespace", opts.Namespace, "--log-level", "warn"}
	args = append(args, DevServerArgs(opts.DBFile)...)
	t := &Temporal{address: net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Port))}
	if opts.Headless {
		args = append(args, "--headless")
	} else {
		if opts.UIPort == 0 {
			if opts.UIPort, err = FreePort(); err != nil {
				return nil, err
			}
		}
		args = append(args, "--ui-port", strconv.Itoa(opts.UIPort))
		t.uiURL = fmt.Sprintf("http://127.0.0.1:%d", opts.UIPort)
	}
	// Not CommandContext: the server's lifetime is governed by Stop, not by the
	// context of the start-up call.
	cmd := exec.Command(opts.Bin, args...)
	var logf *os.File
	if opts.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(opts.LogFile), 0o755); err != nil {
			return nil, err
		}
		if logf, err = os.Create(opts.LogFile); err != nil {
			return nil, err
		}
		defer logf.Close() // the child holds its own descriptor
		cmd.Stdout, cmd.Stderr = logf, logf
	}
	fmt.Fprintf(progress, "temporal: starting dev server on %s\n", t.address)
	if t.proc, err = StartProcess("temporal", cmd); err != nil {
		return nil, err
	}
	if err := t.waitReady(ctx, opts.Bin, opts.Namespace, 90*time.Second); err != nil {
		_ = t.proc.Stop(DefaultGrace)
		if opts.LogFile != "" {
			err = fmt.Errorf("%w%s", err, indent(TailFile(opts.LogFile, 15)))
		}
		return nil, err
	}
	return t, nil
}

// waitReady polls until the namespace can be described: the gRPC port alone
// opens before the namespace registry is loaded.
func (t *Temporal) waitReady(ctx context.Context, bin, namespace string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A server that dies (e.g. port taken by someone else, who then answers our
	// probes) must end the wait at once, not after the probe's timeout.
	go func() {
		select {
		case <-t.proc.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		if t.proc.Exited() {
			exitErr := t.proc.Err()
			if exitErr == nil {
				exitErr = errors.New("exit status 0")
			}
			return fmt.Errorf("temporal dev server exited during start-up: %w", exitErr)
		}
		if conn, err := net.DialTimeout("tcp", t.address, time.Second); err == nil {
			_ = conn.Close()
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			err := exec.CommandContext(cctx, bin, "operator", "namespace", "describe",
				"--namespace", namespace, "--address", t.address).Run()
			ccancel()
			if err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if t.proc.Exited() {
				continue // reported at the top of the loop
			}
			return fmt.Errorf("wait for temporal on %s: %w", t.address, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Address is the frontend gRPC host:port.
func (t *Temporal) Address() string { return t.address }

// UIURL is the Web UI base URL; empty for an external or headless server.
func (t *Temporal) UIURL() string { return t.uiURL }

// Done is closed when a dev server we started exits; nil (never ready) for an external one.
func (t *Temporal) Done() <-chan struct{} {
	if t.proc == nil {
		return nil
	}
	return t.proc.Done()
}

// Stop terminates a dev server we started (SIGTERM, then SIGKILL after DefaultGrace).
func (t *Temporal) Stop() error {
	if t.proc == nil {
		return nil
	}
	return t.proc.Stop(DefaultGrace)
}

// CPU is the processor time a dev server we started used; valid once
// Stop returned (0 for an external server).
func (t *Temporal) CPU() time.Duration {
	if t.proc == nil {
		return 0
	}
	return t.proc.CPU()
}

// EnsureTemporalCLI builds the temporal CLI into bin's directory when bin does
// not exist. A file lock keeps concurrent callers from building it twice.
func EnsureTemporalCLI(ctx context.Context, bin string, progress io.Writer) error {
	if bin == "" {
		return errors.New("temporal CLI path is empty")
	}
	if filepath.Base(bin) != "temporal" {
		return fmt.Errorf("temporal CLI %s must be named temporal to be built by go install", bin)
	}
	if _, err := os.Stat(bin); err == nil {
		return nil
	}
	dir := filepath.Dir(bin)
	unlock, err := Lock(filepath.Join(dir, ".temporal.lock"), true)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return nil // built by whoever held the lock
	}
	fmt.Fprintf(progress, "temporal: building CLI %s into %s (once; 2-3 min on a cold cache)\n", TemporalCLIVersion, dir)
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/temporalio/cli/cmd/temporal@"+TemporalCLIVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir)
	cmd.Stdout, cmd.Stderr = progress, progress
	start := time.Now()
	done := make(chan struct{})
	go func() { // go install is silent while compiling; show it is alive
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Second):
				fmt.Fprintf(progress, "temporal: still building (%s)\n", time.Since(start).Round(time.Second))
			}
		}
	}()
	err = cmd.Run()
	close(done)
	if err != nil {
		return fmt.Errorf("build temporal CLI: %w", err)
	}
	fmt.Fprintf(progress, "temporal: CLI built in %s\n", time.Since(start).Round(time.Second))
	return nil
}
