package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/metadata"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

// component is one binary of the stack.
type component struct {
	name string // binary name, log file name and env prefix (upper-cased)
	pkg  string // package to build, relative to the repository root
	port int    // default gRPC port on 127.0.0.1; 0 for the gateway
}

var services = []component{
	{"lifecycle", "./services/lifecycle/cmd/lifecycle", 9101},
	{"lineage", "./services/lineage/cmd/lineage", 9102},
	{"queue", "./services/queue/cmd/queue", 9103},
	{"runner", "./services/runner/cmd/runner", 9104},
	{"notification", "./services/notification/cmd/notification", 9105},
}

var gateway = component{"gateway", "./gateway/cmd/gateway", 0}

// metricsPort is where make run serves a component's Prometheus metrics
// (<SVC>_METRICS_ADDR): 9200 for the gateway, the gRPC port + 100 for a
// service (lifecycle 9201 … notification 9205).
func metricsPort(c component) int {
	if c.port == 0 {
		return 9200
	}
	return c.port + 100
}

// metricsAddrs resolves each component's metrics address, honouring
// <SVC>_METRICS_ADDR.
func (e *env) metricsAddrs() map[string]string {
	m := map[string]string{}
	for _, c := range append(slices.Clone(services), gateway) {
		m[c.name] = e.get(envName(c.name, "METRICS_ADDR"), fmt.Sprintf("127.0.0.1:%d", metricsPort(c)))
	}
	return m
}

// tools are built beside the components but not started by the stack: the
// demo agent is what the runner runs for a session by default.
var tools = []string{"./services/runner/cmd/zimmer-demo-agent"}

// databases are created for the services, one each: a service owns its database alone.
func databases() []string {
	dbs := make([]string, len(services))
	for i, s := range services {
		dbs[i] = "zimmer_" + s.name
	}
	return dbs
}

const readyTimeout = 90 * time.Second

// runStack is `make run`: everything on one machine, in the foreground until
// Ctrl-C. A service or the gateway that crashes is restarted (see
// devstack.DefaultRestartPolicy); the stack stops when one keeps crashing or
// the Temporal dev server dies.
func (e *env) runStack(ctx context.Context) (err error) {
	// Two supervisors on one data folder would fight over ports and clusters.
	unlock, err := devstack.Lock(filepath.Join(e.dataDir, "run.lock"), false)
	if err != nil {
		return fmt.Errorf("is another `make run` active? %w", err)
	}
	defer unlock()

	// Everything we start is stopped in reverse order on every way out.
	var cleanups []func()
	defer func() {
		if len(cleanups) > 0 {
			e.say("shutting down")
		}
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		if len(cleanups) > 0 {
			e.say("stopped")
		}
	}()

	addrs := e.grpcAddrs()
	httpAddr := e.get("GATEWAY_HTTP_ADDR", "127.0.0.1:8080")
	metricsAddrs := e.metricsAddrs()
	if err := checkFree(append(append(mapValues(addrs), mapValues(metricsAddrs)...), httpAddr)...); err != nil {
		return err
	}

	// Build first: a compile error should cost nothing else.
	if err := e.buildAll(ctx); err != nil {
		return err
	}

	pg, err := e.startRunPostgres(ctx)
	if err != nil {
		return err
	}
	if pg.Started() {
		cleanups = append(cleanups, func() {
			if err := pg.Stop(); err != nil {
				e.say("%v", err)
			}
		})
	}

	tmp, err := e.startRunTemporal(ctx)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() { _ = tmp.Stop() })

	apiKeys, adminKeys, err := e.apiKeys()
	if err != nil {
		return err
	}
	internalToken, err := e.internalToken()
	if err != nil {
		return err
	}
	// The same variables for the services and the gateway: the keys the
	// gateway and the services accept, and the token that tells a Zimmer
	// service from a client (docs/security.md). Never printed.
	common := map[string]string{
		"TEMPORAL_ADDRESS":      tmp.Address(),
		"TEMPORAL_NAMESPACE":    "default",
		"ZIMMER_API_KEYS":       apiKeys,
		"ZIMMER_ADMIN_API_KEYS": adminKeys,
		"ZIMMER_INTERNAL_TOKEN": internalToken,
	}

	consoleHash, consoleSignIn, err := e.consoleLogin()
	if err != nil {
		return err
	}

	logDir := filepath.Join(e.dataDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	// Stopped before Temporal and Postgres: the gateway first, then the services.
	var svcs []*devstack.Supervisor
	var gw *devstack.Supervisor
	cleanups = append(cleanups, func() { e.stopSupervised(gw, svcs) })
	firstKey, _, _ := strings.Cut(apiKeys, ",")
	md := metadata.Pairs("x-api-key", firstKey)

	dbURLs := make(map[string]string, len(services))
	for _, s := range services {
		vars := e.serviceEnv(s, pg.DatabaseURL("zimmer_"+s.name), addrs, common)
		dbURLs[s.name] = vars[envName(s.name, "DATABASE_URL")]
		sup, err := e.superviseComponent(s, logDir, vars)
		if err != nil {
			return err
		}
		svcs = append(svcs, sup)
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, s := range services {
		g.Go(func() error {
			return waitReady(gctx, svcs[i], func(ctx context.Context) error {
				return devstack.WaitGRPCServing(ctx, addrs[s.name], md)
			})
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	e.say("services ready")

	if gw, err = e.superviseComponent(gateway, logDir, e.gatewayEnv(addrs, httpAddr, common, consoleHash)); err != nil {
		return err
	}
	base := "http://" + dialable(httpAddr)
	if err := waitReady(ctx, gw, func(ctx context.Context) error {
		return devstack.WaitHTTPOK(ctx, base+"/healthz")
	}); err != nil {
		return err
	}

	printBox(e.out, [][2]string{
		{"Console", base + "/console/"},
		{"Console sign-in", consoleSignIn},
		{"REST", base + "/api/v1"},
		{"OpenAPI", base + "/openapi.json"},
		{"MCP", base + "/mcp"},
		{"Health", base + "/healthz"},
		{"Metrics", "http://" + dialable(metricsAddrs["gateway"]) + "/metrics (gateway; lifecycle … notification: ports 9201–9205)"},
		{"Temporal Web UI", orDefault(tmp.UIURL(), "(external Temporal at "+tmp.Address()+")")},
		{"Postgres", pg.AdminURL()},
		{"API key", firstKey},
		{"Logs", logDir},
	})
	// Outside the box so that it can be copied as is.
	fmt.Fprintf(e.out, "Try:\n  curl -H \"X-API-Key: %s\" %s/api/v1/sessions\n\nCtrl-C stops everything.\n\n", firstKey, base)

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go e.watchDeadLetters(watchCtx, dbURLs, deadLetterInterval)

	// Run until interrupted, or until a component keeps crashing: a stack
	// with a piece missing for good only hides the real failure.
	all := append([]*devstack.Supervisor{gw}, svcs...)
	ended := make(chan *devstack.Supervisor, len(all))
	for _, s := range all {
		go func() { <-s.Done(); ended <- s }()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(e.out)
		return nil
	case <-tmp.Done():
		return fmt.Errorf("temporal dev server exited unexpectedly; see %s%s",
			filepath.Join(logDir, "temporal.log"), tail(filepath.Join(logDir, "temporal.log")))
	case s := <-ended:
		return fmt.Errorf("%w; stopping the stack (log %s)", s.Err(), logFile(logDir, s.Name()))
	}
}

// grpcAddrs resolves each service's listen address, honouring <SVC>_GRPC_ADDR.
func (e *env) grpcAddrs() map[string]string {
	m := make(map[string]string, len(services))
	for _, s := range services {
		m[s.name] = e.get(envName(s.name, "GRPC_ADDR"), fmt.Sprintf("127.0.0.1:%d", s.port))
	}
	return m
}

func (e *env) buildAll(ctx context.Context) error {
	pkgs := []string{}
	for _, c := range append(services, gateway) {
		pkgs = append(pkgs, c.pkg)
	}
	pkgs = append(pkgs, tools...)
	bin := filepath.Join(e.root, "bin") + string(filepath.Separator)
	e.say("building %d binaries into %s", len(pkgs), bin)
	// One invocation builds all packages in parallel; run from the root so go.work applies.
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", bin}, pkgs...)...)
	cmd.Dir = e.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("build failed (go build -o bin/ %s): %w%s", strings.Join(pkgs, " "), err, indentLines(string(out)))
	}
	return nil
}

func (e *env) startRunPostgres(ctx context.Context) (*devstack.Postgres, error) {
	var pg *devstack.Postgres
	var err error
	if url := e.getenv("ZIMMER_DATABASE_URL"); url != "" {
		e.say("postgres: using external server from ZIMMER_DATABASE_URL")
		pg, err = devstack.ConnectPostgres(ctx, url)
	} else {
		// It holds the user's real sessions: every acknowledged commit must survive a crash.
		pg, err = devstack.StartPostgres(ctx, devstack.PostgresOptions{
			DataDir: e.pgDataDir(), Durability: devstack.Durable, Progress: e.progress(),
		})
	}
	if err != nil {
		return nil, err
	}
	for _, db := range databases() {
		if err := pg.EnsureDatabase(ctx, db); err != nil {
			if pg.Started() {
				_ = pg.Stop()
			}
			return nil, err
		}
	}
	e.say("postgres: databases ready: %s", strings.Join(databases(), " "))
	return pg, nil
}

func (e *env) startRunTemporal(ctx context.Context) (*devstack.Temporal, error) {
	if addr := e.getenv("TEMPORAL_ADDRESS"); addr != "" {
		e.say("temporal: using external server %s from TEMPORAL_ADDRESS", addr)
		return devstack.ConnectTemporal(ctx, addr)
	}
	port, err := strconv.Atoi(e.get("ZIMMER_TEMPORAL_PORT", "7233"))
	if err != nil {
		return nil, fmt.Errorf("ZIMMER_TEMPORAL_PORT: %w", err)
	}
	uiPort, err := strconv.Atoi(e.get("ZIMMER_TEMPORAL_UI_PORT", "8233"))
	if err != nil {
		return nil, fmt.Errorf("ZIMMER_TEMPORAL_UI_PORT: %w", err)
	}
	t, err := devstack.StartTemporal(ctx, devstack.TemporalOptions{
		Bin:       e.temporalCLI(),
		Port:      port,
		UIPort:    uiPort,
		DBFile:    filepath.Join(e.dataDir, "temporal.db"),
		Namespace: e.get("TEMPORAL_NAMESPACE", "default"),
		LogFile:   filepath.Join(e.dataDir, "logs", "temporal.log"),
		Progress:  e.progress(),
	})
	if err != nil {
		return nil, err
	}
	e.say("temporal: ready on %s, Web UI %s", t.Address(), t.UIURL())
	return t, nil
}

// apiKeys returns ZIMMER_API_KEYS and ZIMMER_ADMIN_API_KEYS. Unset, both
// are the key generated once into the data folder (api-key): the key make
// run prints opens the whole API, the admin methods too. Keys the caller
// sets are used as given; an operator key the caller chose is not made an
// admin key.
func (e *env) apiKeys() (operator, admin string, err error) {
	admin = e.getenv("ZIMMER_ADMIN_API_KEYS")
	if keys := e.getenv("ZIMMER_API_KEYS"); keys != "" {
		return keys, admin, nil
	}
	key, err := e.secret("api-key", "API key")
	if err != nil {
		return "", "", err
	}
	if admin == "" {
		admin = key
	}
	return key, admin, nil
}

// internalToken returns ZIMMER_INTERNAL_TOKEN, or a token generated once
// into the data folder (internal-token, mode 0600). Only the services and
// the gateway get it; it is never printed and no client needs it.
func (e *env) internalToken() (string, error) {
	if t := e.getenv("ZIMMER_INTERNAL_TOKEN"); t != "" {
		return t, nil
	}
	return e.secret("internal-token", "internal token")
}

// consoleLogin returns the console's password hash for the gateway
// (ZIMMER_CONSOLE_PASSWORD_HASH) and how to sign in, to print beside the
// URLs. Unless the caller set the hash, the password is generated once into
// the data folder (console-password, mode 0600) and printed: it opens the
// console only, never the API.
func (e *env) consoleLogin() (hash, signIn string, err error) {
	user := e.get("ZIMMER_ADMIN_USER", "tadasant")
	if h := e.getenv("ZIMMER_CONSOLE_PASSWORD_HASH"); h != "" {
		return h, user + " / the password of your ZIMMER_CONSOLE_PASSWORD_HASH", nil
	}
	password, err := e.secret("console-password", "console password")
	if err != nil {
		return "", "", err
	}
	b, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", "", fmt.Errorf("hash the console password: %w", err)
	}
	return string(b), "user " + user + ", password " + password, nil
}

// secret returns the secret kept in the data folder's file name, generating
// 32 random bytes (hex) into it, readable by the owner only, the first time.
func (e *env) secret(name, what string) (string, error) {
	path := filepath.Join(e.dataDir, name)
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return "", fmt.Errorf("keep %s owner-only: %w", path, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	value := hex.EncodeToString(buf)
	if err := os.MkdirAll(e.dataDir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(value+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("store %s: %w", what, err)
	}
	e.say("generated %s in %s", what, path)
	return value, nil
}

// serviceEnv is the environment of one service; values set by the caller win.
func (e *env) serviceEnv(s component, dbURL string, addrs, common map[string]string) map[string]string {
	m := map[string]string{
		envName(s.name, "DATABASE_URL"): dbURL,
		envName(s.name, "GRPC_ADDR"):    addrs[s.name],
		envName(s.name, "METRICS_ADDR"): fmt.Sprintf("127.0.0.1:%d", metricsPort(s)),
	}
	if s.name == "lifecycle" {
		// The queue consumes the archive's retirement and the pause's drain;
		// notification the pushes (needs input, failure) and their clean-up;
		// the runner its turns and the clone's clean-up and restore.
		m["LIFECYCLE_EFFECT_CONSUMERS"] = "lineage=" + addrs["lineage"] + ",runner_turns=" + addrs["runner"] + ",queue=" + addrs["queue"] +
			",notification=" + addrs["notification"] + ",runner=" + addrs["runner"]
		m["LIFECYCLE_NOTIFICATION_ADDR"] = addrs["notification"]
		// A pause or an archive of a running session halts its turn there first.
		m["LIFECYCLE_RUNNER_ADDR"] = dialable(addrs["runner"])
		// An archive seals the session's queue first (the archive guard).
		m["LIFECYCLE_QUEUE_ADDR"] = dialable(addrs["queue"])
	}
	if s.name == "runner" {
		// Sessions run the demo agent unless they name a runtime; clones
		// live in the data folder; agents reach the gateway's MCP.
		m["RUNNER_DEFAULT_RUNTIME"] = "demo"
		m["RUNNER_DEMO_AGENT_PATH"] = filepath.Join(e.root, "bin", "zimmer-demo-agent")
		m["RUNNER_WORKSPACES_DIR"] = filepath.Join(e.dataDir, "workspaces")
		m["RUNNER_LIFECYCLE_ADDR"] = dialable(addrs["lifecycle"])
		m["RUNNER_MCP_URL"] = "http://" + dialable(e.get("GATEWAY_HTTP_ADDR", "127.0.0.1:8080")) + "/mcp"
		// A turn's end hands the next queued message over before pausing.
		m["RUNNER_QUEUE_ADDR"] = dialable(addrs["queue"])
		// Each turn's prompt carries the blocks lineage renders.
		m["RUNNER_LINEAGE_ADDR"] = dialable(addrs["lineage"])
	}
	if s.name == "queue" {
		// The queue resolves sessions and delivers turns through lifecycle,
		// stops a running turn for an interrupt through the runner, and
		// records the uncle edge of a message a session sent through lineage;
		// its alerts (retired messages, an exhausted drain) page through
		// notification.
		m["QUEUE_LIFECYCLE_ADDR"] = dialable(addrs["lifecycle"])
		m["QUEUE_RUNNER_ADDR"] = dialable(addrs["runner"])
		m["QUEUE_LINEAGE_ADDR"] = dialable(addrs["lineage"])
		m["QUEUE_NOTIFICATION_ADDR"] = addrs["notification"]
	}
	if s.name == "notification" {
		// A debounced needs-input push asks lifecycle whether the session
		// still waits before it is pushed.
		m["NOTIFICATION_LIFECYCLE_ADDR"] = dialable(addrs["lifecycle"])
		// A Slack message's follow-up goes through the queue and its human
		// message to lineage; its thread gets the console's link.
		m["NOTIFICATION_QUEUE_ADDR"] = dialable(addrs["queue"])
		m["NOTIFICATION_LINEAGE_ADDR"] = dialable(addrs["lineage"])
		m["NOTIFICATION_CONSOLE_URL"] = "http://" + dialable(e.get("GATEWAY_HTTP_ADDR", "127.0.0.1:8080")) + "/console/"
	}
	if s.name == "lineage" {
		m["LINEAGE_EVENT_CONSUMERS"] = "lifecycle=" + addrs["lifecycle"]
		m["LINEAGE_NOTIFICATION_ADDR"] = addrs["notification"]
	}
	for k, v := range common {
		m[k] = v
	}
	return e.withCallerEnv(m)
}

func (e *env) gatewayEnv(addrs map[string]string, httpAddr string, common map[string]string, consoleHash string) map[string]string {
	m := map[string]string{"GATEWAY_HTTP_ADDR": httpAddr, "ZIMMER_CONSOLE_PASSWORD_HASH": consoleHash,
		"GATEWAY_METRICS_ADDR": fmt.Sprintf("127.0.0.1:%d", metricsPort(gateway))}
	for _, s := range services {
		m[envName("gateway", s.name+"_ADDR")] = dialable(addrs[s.name])
	}
	for k, v := range common {
		m[k] = v
	}
	return e.withCallerEnv(m)
}

func (e *env) withCallerEnv(m map[string]string) map[string]string {
	for k := range m {
		if v := e.getenv(k); v != "" {
			m[k] = v
		}
	}
	return m
}

// startComponent starts bin/<name> with its output in <logDir>/<name>.log and a
// compact copy on the terminal. A restart appends to the log, after the lines
// that tell why the previous run died.
func (e *env) startComponent(c component, logDir string, vars map[string]string, restart bool) (*devstack.Process, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if restart {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(logFile(logDir, c.name), flags, 0o644)
	if err != nil {
		return nil, err
	}
	if restart {
		// In the log's own shape, so that a tail shows where the new run begins.
		mark, _ := json.Marshal(struct {
			Time    time.Time `json:"time"`
			Level   string    `json:"level"`
			Msg     string    `json:"msg"`
			Service string    `json:"service"`
		}{time.Now(), "INFO", "zimmer-dev: starting again after a crash", c.name})
		_, _ = f.Write(append(mark, '\n'))
	}
	w := io.MultiWriter(f, newLogTail(c.name, 12, e.out))
	cmd := exec.Command(filepath.Join(e.root, "bin", c.name))
	cmd.Dir = e.root
	cmd.Env = os.Environ()
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = w, w
	p, err := devstack.StartProcess(c.name, cmd)
	if err != nil {
		f.Close()
		return nil, err
	}
	// exec copies output through a pipe until the process is reaped.
	go func() { <-p.Done(); f.Close() }()
	e.say("%s: started (pid %d), log %s", c.name, p.Pid(), logFile(logDir, c.name))
	return p, nil
}

// waitReady runs check until it succeeds, failing early when the component
// keeps crashing (its supervisor gives up) before it is ready.
func waitReady(ctx context.Context, sup *devstack.Supervisor, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	go func() {
		select {
		case <-sup.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := check(ctx); err != nil {
		if gaveUp := sup.Err(); gaveUp != nil {
			return fmt.Errorf("%w during start-up", gaveUp)
		}
		return fmt.Errorf("%s not ready: %w", sup.Name(), err)
	}
	return nil
}

// checkFree fails when a listen address is taken, typically by a stack left
// running elsewhere; better than a health check answered by the wrong process.
func checkFree(addrs ...string) error {
	var busy []string
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			busy = append(busy, a)
			continue
		}
		_ = l.Close()
	}
	if len(busy) > 0 {
		return fmt.Errorf("address already in use: %s (another stack running? override with <SVC>_GRPC_ADDR / <SVC>_METRICS_ADDR / GATEWAY_HTTP_ADDR)", strings.Join(busy, ", "))
	}
	return nil
}

// dialable turns a listen address into one a client can dial (":8080" → "127.0.0.1:8080").
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func envName(prefix, name string) string { return strings.ToUpper(prefix + "_" + name) }

func logFile(dir, name string) string { return filepath.Join(dir, name+".log") }

func tail(path string) string { return indentLines(devstack.TailFile(path, 20)) }

func indentLines(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return "\n    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func mapValues(m map[string]string) []string {
	vs := make([]string, 0, len(m))
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// printBox prints label/value rows in a frame; an empty row is a spacer.
func printBox(w io.Writer, rows [][2]string) {
	const title = " Zimmer dev stack is ready "
	labelW, width := 0, utf8.RuneCountInString(title)+2
	for _, r := range rows {
		labelW = max(labelW, len(r[0]))
	}
	lines := make([]string, len(rows))
	for i, r := range rows {
		if r[0] != "" {
			lines[i] = fmt.Sprintf("%-*s  %s", labelW, r[0], r[1])
		}
		width = max(width, utf8.RuneCountInString(lines[i]))
	}
	fmt.Fprintf(w, "\n╭─%s%s─╮\n", title, strings.Repeat("─", width-utf8.RuneCountInString(title)))
	for _, l := range lines {
		fmt.Fprintf(w, "│ %s%s │\n", l, strings.Repeat(" ", width-utf8.RuneCountInString(l)))
	}
	fmt.Fprintf(w, "╰─%s─╯\n", strings.Repeat("─", width))
}
