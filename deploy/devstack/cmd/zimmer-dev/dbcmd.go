package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

// dbUp starts (or reuses) the `make run` cluster alone, e.g. to run one
// service from an IDE. It stays up until db-down.
func (e *env) dbUp(ctx context.Context) error {
	pg, err := e.startRunPostgres(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "\nadmin URL:  %s\n", pg.AdminURL())
	for _, s := range services {
		fmt.Fprintf(e.out, "%s=%s\n", envName(s.name, "DATABASE_URL"), pg.DatabaseURL("zimmer_"+s.name))
	}
	return nil
}

func (e *env) dbDown() error {
	if e.getenv("ZIMMER_DATABASE_URL") != "" {
		e.say("postgres: external server (ZIMMER_DATABASE_URL); nothing to stop")
		return nil
	}
	if err := devstack.StopPostgresAt(e.pgDataDir()); err != nil {
		return err
	}
	e.say("postgres: stopped (data kept in %s)", e.pgDataDir())
	return nil
}

// temporalAlone runs a dev server until ctx ends (Ctrl-C), so benchmarks and
// hand-run tests get the same server `make test` starts.
func (e *env) temporalAlone(ctx context.Context) error {
	port, err := strconv.Atoi(e.get("ZIMMER_TEMPORAL_PORT", "0"))
	if err != nil {
		return fmt.Errorf("ZIMMER_TEMPORAL_PORT: %w", err)
	}
	t, err := devstack.StartTemporal(ctx, devstack.TemporalOptions{
		Bin:      e.temporalCLI(),
		Port:     port,
		Headless: true,
		LogFile:  filepath.Join(e.dataDir, "logs", fmt.Sprintf("temporal-alone-%d.log", os.Getpid())),
		Progress: e.progress(),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "\nZIMMER_TEST_TEMPORAL_ADDRESS=%s\n(Ctrl-C stops it)\n", t.Address())
	select {
	case <-ctx.Done():
	case <-t.Done():
		return errors.New("the temporal dev server exited")
	}
	return t.Stop()
}

// clean removes bin/ and the data folder. It kills nothing: while a process
// runs from them (a cluster, a service, the Temporal server), it refuses.
func (e *env) clean() error {
	bin := filepath.Join(e.root, "bin")
	var users []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		pid, _ := strconv.Atoi(filepath.Base(dir))
		if pid == os.Getpid() {
			continue
		}
		exe, _ := os.Readlink(filepath.Join(dir, "exe"))
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		args := strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
		if under(exe, bin) || under(exe, e.dataDir) || strings.Contains(args, e.dataDir) {
			users = append(users, fmt.Sprintf("  pid %d: %s", pid, args))
		}
	}
	if len(users) > 0 {
		return fmt.Errorf("still running from bin/ or %s (stop make run, then make db-down):\n%s",
			e.dataDir, strings.Join(users, "\n"))
	}
	for _, d := range []string{bin, e.dataDir} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		e.say("removed %s", d)
	}
	return nil
}

func under(path, dir string) bool {
	return path != "" && (path == dir || strings.HasPrefix(path, dir+string(filepath.Separator)))
}
