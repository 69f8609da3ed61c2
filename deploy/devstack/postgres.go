package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultPostgresBinDir is where Debian's postgresql-15 package puts initdb and pg_ctl.
const DefaultPostgresBinDir = "/usr/lib/postgresql/15/bin"

// portFile, inside the data directory, remembers the port chosen at initdb time
// so that every later start serves the same cluster on the same URL.
const portFile = "zimmer-port"

// PostgresOptions configures StartPostgres.
type PostgresOptions struct {
	// DataDir is the cluster directory (PGDATA). initdb runs when it holds no cluster yet.
	DataDir string
	// Port is used at first init; 0 picks a free one. Later starts reuse the stored port.
	Port int
	// BinDir holds initdb and pg_ctl; empty means DefaultPostgresBinDir or the newest
	// /usr/lib/postgresql/*/bin.
	BinDir string
	// Durability is Durable unless set: only a cluster whose data is thrown away
	// (make test's) may trade crash safety for speed.
	Durability Durability
	// Progress receives human-readable progress lines; nil discards them.
	Progress io.Writer
}

// Durability says whether a cluster survives a crash of the machine with every
// acknowledged commit. It is passed to the server on every start (command-line
// settings outrank postgresql.conf), so an existing cluster gets it too.
type Durability int

const (
	// Durable is Postgres's default: fsync, synchronous_commit and
	// full_page_writes on. The zero value, for clusters that hold real data
	// (make run's .data/postgres).
	Durable Durability = iota
	// Disposable turns fsync, synchronous_commit and full_page_writes off: a
	// crash may lose or corrupt data, which is fine for a cluster recreated on
	// every run (make test's .data/test-pg) and several times faster.
	Disposable
)

func (d Durability) String() string {
	if d == Disposable {
		return "disposable"
	}
	return "durable"
}

// durabilitySettings are the server settings a Durability fixes, in SHOW order.
var durabilitySettings = []string{"fsync", "synchronous_commit", "full_page_writes"}

// serverOptions is the postgres command line (pg_ctl -o) stating the durability.
func (d Durability) serverOptions() string {
	value := "on"
	if d == Disposable {
		value = "off"
	}
	opts := make([]string, len(durabilitySettings))
	for i, name := range durabilitySettings {
		opts[i] = fmt.Sprintf("-c %s=%s", name, value)
	}
	return strings.Join(opts, " ")
}

// Postgres is a running Postgres server: either a private cluster managed with
// pg_ctl, or an external server given by URL.
type Postgres struct {
	adminURL string
	dataDir  string // empty for an external server
	binDir   string
	port     int
	durable  Durability
	started  bool // this process started the server (as opposed to reusing it)
	cred     *syscall.Credential
}

// ConnectPostgres uses an external server. adminURL must allow CREATE DATABASE.
// Stop is a no-op for it.
func ConnectPostgres(ctx context.Context, adminURL string) (*Postgres, error) {
	p := &Postgres{adminURL: adminURL}
	if err := p.ping(ctx); err != nil {
		return nil, fmt.Errorf("connect to external postgres: %w", err)
	}
	return p, nil
}

// StartPostgres initialises (once) and starts a private cluster listening only on
// 127.0.0.1, with its unix socket inside the data directory, trust auth and
// the asked Durability. A cluster already running from the same directory is
// reused; when Durable is asked and it runs without fsync (started by an older
// zimmer-dev, or as Disposable), it is restarted durable first.
func StartPostgres(ctx context.Context, opts PostgresOptions) (*Postgres, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	dir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	binDir := opts.BinDir
	if binDir == "" {
		if binDir, err = findPostgresBinDir(); err != nil {
			return nil, err
		}
	}
	p := &Postgres{dataDir: dir, binDir: binDir, durable: opts.Durability}
	if p.cred, err = postgresCredential(); err != nil {
		return nil, err
	}

	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(progress, "postgres: initialising %s cluster in %s\n", opts.Durability, dir)
		if err := p.initdb(ctx, opts.Port); err != nil {
			return nil, err
		}
	}
	if err := p.dropLegacySettings(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, portFile))
	if err != nil {
		return nil, fmt.Errorf("read postgres port (delete %s to re-initialise): %w", dir, err)
	}
	if p.port, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, portFile), err)
	}
	p.adminURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)

	if !p.Running(ctx) {
		fmt.Fprintf(progress, "postgres: starting %s on 127.0.0.1:%d\n", opts.Durability, p.port)
		if err := p.start(ctx); err != nil {
			return nil, err
		}
		p.started = true
	} else {
		fmt.Fprintf(progress, "postgres: reusing running cluster on 127.0.0.1:%d\n", p.port)
	}
	settings, err := p.durabilitySettings(ctx)
	if err != nil {
		return nil, err
	}
	if opts.Durability == Durable && !allOn(settings) {
		// Started by an older zimmer-dev (or as Disposable): its data is real
		// now, so a restart is worth the dropped connections. It stays
		// "reused": whoever started it keeps owning its lifetime.
		fmt.Fprintf(progress, "postgres: running cluster is not durable (%s); restarting it durable\n", settings)
		if err := p.Stop(); err != nil {
			return nil, err
		}
		if err := p.start(ctx); err != nil {
			return nil, err
		}
		if settings, err = p.durabilitySettings(ctx); err != nil {
			return nil, err
		}
	}
	if opts.Durability == Durable && !allOn(settings) {
		return nil, fmt.Errorf("postgres in %s is still not durable after a restart (%s)", dir, settings)
	}
	return p, nil
}

// start runs the postmaster with the cluster's durability on its command line.
func (p *Postgres) start(ctx context.Context) error {
	// pg_ctl detaches the postmaster (setsid) and sends its output to -l, so
	// it survives us on purpose and never holds our pipes open.
	_, err := p.pgctl(ctx, "start", "-D", p.dataDir, "-l", p.LogFile(), "-w", "-t", "60", "-s",
		"-o", p.durable.serverOptions())
	if err != nil {
		// A cancelled or timed-out pg_ctl may leave a postmaster behind that
		// only we know about.
		_ = p.Stop()
		return fmt.Errorf("start postgres: %w%s", err, indent(TailFile(p.LogFile(), 15)))
	}
	return nil
}

// settingValues are SHOW results by setting name.
type settingValues map[string]string

func (s settingValues) String() string {
	parts := make([]string, len(durabilitySettings))
	for i, name := range durabilitySettings {
		parts[i] = name + "=" + s[name]
	}
	return strings.Join(parts, " ")
}

func allOn(s settingValues) bool {
	for _, name := range durabilitySettings {
		if s[name] != "on" {
			return false
		}
	}
	return true
}

// durabilitySettings reads what the running server actually does, which is
// what matters, wherever it was set.
func (p *Postgres) durabilitySettings(ctx context.Context) (settingValues, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.adminURL)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	s := settingValues{}
	for _, name := range durabilitySettings {
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			return nil, fmt.Errorf("read postgres setting %s: %w", name, err)
		}
		s[name] = v
	}
	return s, nil
}

// legacyConfLines are what zimmer-dev once appended to postgresql.conf, mapped
// to their replacement ("" drops the line). Durability now comes with each
// start; removing them also keeps a cluster started by hand with pg_ctl durable.
var legacyConfLines = map[string]string{
	"# Added by zimmer devstack: private, loopback-only, disposable cluster.": confHeader,
	"fsync = off":              "",
	"synchronous_commit = off": "",
	"full_page_writes = off":   "",
}

const confHeader = "# Added by zimmer devstack: private, loopback-only cluster; durability is set at each start (pg_ctl -o)."

// dropLegacySettings rewrites postgresql.conf without legacyConfLines.
func (p *Postgres) dropLegacySettings() error {
	path := filepath.Join(p.dataDir, "postgresql.conf")
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read postgresql.conf: %w", err)
	}
	var kept []string
	changed := false
	for line := range strings.SplitSeq(string(b), "\n") {
		replacement, legacy := legacyConfLines[strings.TrimSpace(line)]
		switch {
		case !legacy:
			kept = append(kept, line)
		case replacement != "":
			kept = append(kept, replacement)
		}
		changed = changed || legacy
	}
	if !changed {
		return nil
	}
	// WriteFile keeps the existing file's owner and mode.
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
		return fmt.Errorf("rewrite postgresql.conf without fsync=off: %w", err)
	}
	return nil
}

func (p *Postgres) initdb(ctx context.Context, port int) error {
	if entries, err := os.ReadDir(p.dataDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty but holds no cluster; remove it to re-initialise", p.dataDir)
	}
	// Parents stay world-traversable: the server runs as the postgres user.
	if err := os.MkdirAll(filepath.Dir(p.dataDir), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(p.dataDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := p.chown(p.dataDir); err != nil {
		return err
	}
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return err
		}
	}
	args := []string{"-D", p.dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-instructions"}
	if p.durable == Disposable {
		args = append(args, "--no-sync")
	}
	if _, err := p.exec(ctx, filepath.Join(p.binDir, "initdb"), args...); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	// make test's disposable cluster serves two lanes at once (the e2e
	// module's stacks, six pools each, beside another module's tests):
	// 200 connections ran out ("too many clients").
	maxConnections := 200
	if p.durable == Disposable {
		maxConnections = 800
	}
	conf := fmt.Sprintf(`
%s
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
max_connections = %d
`, confHeader, port, p.dataDir, maxConnections)
	f, err := os.OpenFile(filepath.Join(p.dataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write postgresql.conf: %w", err)
	}
	// Written last: its presence marks a completely initialised cluster.
	pf := filepath.Join(p.dataDir, portFile)
	if err := os.WriteFile(pf, []byte(strconv.Itoa(port)+"\n"), 0o600); err != nil {
		return err
	}
	return p.chown(pf)
}

// AdminURL is a superuser URL for the "postgres" database.
func (p *Postgres) AdminURL() string { return p.adminURL }

// DatabaseURL is AdminURL with the database name replaced.
func (p *Postgres) DatabaseURL(name string) string {
	u, err := url.Parse(p.adminURL)
	if err != nil {
		return p.adminURL // validated by ping at construction
	}
	u.Path = "/" + name
	return u.String()
}

// Port is the TCP port of a private cluster (0 for an external server).
func (p *Postgres) Port() int { return p.port }

// Started reports whether this process started the server, as opposed to
// reusing a running cluster or an external server.
func (p *Postgres) Started() bool { return p.started }

// LogFile is the server log of a private cluster.
func (p *Postgres) LogFile() string { return filepath.Join(p.dataDir, "server.log") }

// Running reports whether the private cluster's postmaster is alive; pg_ctl
// status checks the pid in postmaster.pid, so a stale file after a crash is
// handled correctly.
func (p *Postgres) Running(ctx context.Context) bool {
	if p.dataDir == "" {
		return true
	}
	_, err := p.pgctl(ctx, "status", "-D", p.dataDir)
	return err == nil
}

// EnsureDatabase creates database name if it does not exist yet.
func (p *Postgres) EnsureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, p.adminURL)
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	// 42P04 duplicate_database: someone else created it since our check.
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42P04" {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// Stop shuts a private cluster down (fast mode: active sessions are ended).
// It is a no-op for an external server or a cluster that is not running.
func (p *Postgres) Stop() error {
	if p.dataDir == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if !p.Running(ctx) {
		return nil
	}
	if _, err := p.pgctl(ctx, "stop", "-D", p.dataDir, "-m", "fast", "-w", "-t", "60", "-s"); err != nil {
		return fmt.Errorf("stop postgres: %w", err)
	}
	return nil
}

// CPU is the processor time a running private cluster used so far: its
// postmaster's and that of the backends it reaped (0 for an external
// server). pg_ctl detaches the postmaster, so it is read from /proc.
func (p *Postgres) CPU() (time.Duration, error) {
	if p.dataDir == "" {
		return 0, nil
	}
	b, err := os.ReadFile(filepath.Join(p.dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0, fmt.Errorf("postmaster.pid: %w", err)
	}
	own, reaped, err := ProcessCPU(pid)
	return own + reaped, err
}

// StopPostgresAt stops the private cluster in dataDir if it is running.
func StopPostgresAt(dataDir string) error {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		return nil // no cluster, nothing runs
	} else if err != nil {
		return fmt.Errorf("look for a cluster in %s: %w", dir, err)
	}
	binDir, err := findPostgresBinDir()
	if err != nil {
		return err
	}
	cred, err := postgresCredential()
	if err != nil {
		return err
	}
	return (&Postgres{dataDir: dir, binDir: binDir, cred: cred}).Stop()
}

func (p *Postgres) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.adminURL)
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", err)
	}
	return conn.Close(ctx)
}

func (p *Postgres) pgctl(ctx context.Context, args ...string) ([]byte, error) {
	return p.exec(ctx, filepath.Join(p.binDir, "pg_ctl"), args...)
}

// exec runs a Postgres tool, as the postgres user when we are root: initdb and
// the server refuse to run as root.
func (p *Postgres) exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "/" // the postgres user may not be able to enter our working directory
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %w%s", filepath.Base(name), args[0], err, indent(out.String()))
	}
	return out.Bytes(), nil
}

func (p *Postgres) chown(path string) error {
	if p.cred == nil {
		return nil
	}
	return os.Chown(path, int(p.cred.Uid), int(p.cred.Gid))
}

// postgresCredential is the postgres OS user when running as root, else nil
// (tools then run as the current user).
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres OS user to own the cluster: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func findPostgresBinDir() (string, error) {
	if _, err := os.Stat(filepath.Join(DefaultPostgresBinDir, "pg_ctl")); err == nil {
		return DefaultPostgresBinDir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	if path, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(path), nil
	}
	return "", errors.New("postgres server binaries not found (apt-get install postgresql-15, or set ZIMMER_DATABASE_URL)")
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}
