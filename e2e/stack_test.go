package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/zimmerhq/zimmer/services/platform/grpcclient"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

var services = []string{"lifecycle", "lineage", "queue", "runner", "notification"}

// stack is the whole system as real processes: the five services and the
// gateway, built from this checkout, on free loopback ports, each with its
// own database on the test Postgres and the test Temporal dev server.
type stack struct {
	t    *testing.T
	bin  string
	logs string
	// apiKey is what make run generates: an operator key that is also an
	// admin key. operatorKey is an operator key only. internalToken is the
	// services' identity (ZIMMER_INTERNAL_TOKEN), given to the services
	// and the gateway, never to a client.
	apiKey        string
	operatorKey   string
	internalToken string
	// boundaryToken opens the gateway's test-only human boundary
	// (GATEWAY_TEST_BOUNDARY_TOKEN; the gateway is built with -tags
	// testboundary): the one way these tests record what a human said.
	boundaryToken string
	temporal      string
	// namespace is the Temporal namespace of the stack, one of its own, so
	// that no other stack's worker (they share the dev server) picks up its
	// sessions' workflows, whose ids name sessions by their ids (a runner's
	// session/<id>, the queue's session/<id>/drain), which every stack's
	// sessions reuse.
	namespace string
	// turns: lifecycle announces turn requests to the runner
	// (runner_turns), which runs the demo agent in workspaces.
	turns      bool
	workspaces string
	// webhook is the notification service's push sink: every push of the
	// stack reaches it, signed (see webhookSink).
	webhook *webhookSink
	dbURL   map[string]string // service → database URL
	addr    map[string]string // service or "gateway" → address
	procs   map[string]*exec.Cmd
	// extraEnv adds variables to a process's environment (stackOptions.env).
	extraEnv map[string][]string
	// replicas: every service and the gateway run twice (stackOptions).
	replicas bool
	mu       sync.Mutex
}

func temporalAddress(t *testing.T) string {
	t.Helper()
	a := os.Getenv("ZIMMER_TEST_TEMPORAL_ADDRESS")
	if a == "" {
		if os.Getenv("ZIMMER_REQUIRE_TEMPORAL") == "1" {
			t.Fatal("ZIMMER_TEST_TEMPORAL_ADDRESS is not set but ZIMMER_REQUIRE_TEMPORAL=1: run the tests with `make test`")
		}
		t.Skip("ZIMMER_TEST_TEMPORAL_ADDRESS not set; run `make test` to start a Temporal dev server")
	}
	return a
}

func newStack(t *testing.T) *stack { t.Helper(); return newStackRunning(t, false) }

// newStackRunning starts a stack, in a Temporal namespace of its own (see
// stack.namespace); with turns, created sessions really run.
func newStackRunning(t *testing.T, turns bool) *stack {
	t.Helper()
	return newStackWith(t, stackOptions{turns: turns})
}

// stackOptions are what a stack may differ in: the crash tests give it a
// Postgres and a Temporal dev server of its own to kill, and settings.
type stackOptions struct {
	turns bool
	// temporal is the Temporal frontend address; empty: the shared test
	// server (ZIMMER_TEST_TEMPORAL_ADDRESS).
	temporal string
	// adminURL is a Postgres superuser URL to create the databases on;
	// empty: the shared test Postgres.
	adminURL string
	// env adds variables to a process's environment, by process name.
	env map[string][]string
	// replicas runs two of every process, on one database per service and
	// one Temporal namespace: <name> and <name>-2 (replica). Every
	// service's peers, and the gateways' backends, are both replicas'
	// addresses (grpcclient.ReplicaSeparator), so calls spread over them;
	// the two runners are two nodes, each with its own workspaces and its
	// own gateway for its agents' MCP.
	replicas bool
}

// replica names the second process of name in a replicated stack.
func replica(name string) string { return name + "-2" }

// serviceOf is the service a process runs: lifecycle for lifecycle-2.
func serviceOf(name string) string { return strings.TrimSuffix(name, "-2") }

// processes are the stack's process names: the services', then the
// gateway's, each followed by its replica's in a replicated stack.
func (s *stack) processes() []string {
	var names []string
	for _, n := range append(slices.Clone(services), "gateway") {
		names = append(names, n)
		if s.replicas {
			names = append(names, replica(n))
		}
	}
	return names
}

// target is how the others reach svc: its address, or both replicas'.
func (s *stack) target(svc string) string {
	if a, ok := s.addr[replica(svc)]; ok && s.replicas {
		return s.addr[svc] + grpcclient.ReplicaSeparator + a
	}
	return s.addr[svc]
}

// newStackWith starts a stack as opts say.
func newStackWith(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	start := time.Now()
	admin := opts.adminURL
	if admin == "" {
		admin = pgtest.AdminURL(t)
	}
	temporal := opts.temporal
	if temporal == "" {
		temporal = temporalAddress(t)
	}
	s := &stack{
		t:             t,
		bin:           buildBinaries(t),
		logs:          logsDir(t),
		apiKey:        "e2e-" + fmt.Sprint(time.Now().UnixNano()),
		operatorKey:   "e2e-operator-" + fmt.Sprint(time.Now().UnixNano()),
		internalToken: "e2e-internal-" + fmt.Sprint(time.Now().UnixNano()),
		boundaryToken: "e2e-boundary-" + fmt.Sprint(time.Now().UnixNano()),
		temporal:      temporal,
		turns:         opts.turns,
		extraEnv:      opts.env,
		replicas:      opts.replicas,
		workspaces:    t.TempDir(),
		webhook:       newWebhookSink(t),
		dbURL:         map[string]string{},
		addr:          map[string]string{},
		procs:         map[string]*exec.Cmd{},
	}
	s.namespace = servicetest.TemporalNamespace(t, s.temporal)
	for _, svc := range services {
		s.dbURL[svc] = createDatabase(t, admin, fmt.Sprintf("e2e_%s_%d", svc, time.Now().UnixNano()))
	}
	for _, name := range s.processes() {
		s.addr[name] = freeAddr(t)
	}
	t.Cleanup(s.stopAll)
	for _, name := range s.processes() {
		s.start(name)
	}
	for _, name := range s.processes() {
		if serviceOf(name) == "gateway" {
			s.waitGatewayAt(s.addr[name])
		} else {
			s.waitHealthy(name)
		}
	}
	t.Logf("stack started in %s", time.Since(start).Round(time.Millisecond))
	return s
}

// env is process name's environment: a service's (or the gateway's), or
// its replica's, which differs only in its own addresses and, for a
// runner, in its node.
func (s *stack) env(name string) []string {
	env := append(os.Environ(),
		"TEMPORAL_ADDRESS="+s.temporal,
		"TEMPORAL_NAMESPACE="+s.namespace,
		// As make run wires them (docs/security.md).
		"ZIMMER_API_KEYS="+s.apiKey+","+s.operatorKey,
		"ZIMMER_ADMIN_API_KEYS="+s.apiKey,
		"ZIMMER_INTERNAL_TOKEN="+s.internalToken,
	)
	own := s.addr[name]
	twin := name != serviceOf(name)
	name = serviceOf(name)
	if name == "gateway" {
		env = append(env, "GATEWAY_HTTP_ADDR="+own, "GATEWAY_TEST_BOUNDARY_TOKEN="+s.boundaryToken)
		for _, svc := range services {
			env = append(env, fmt.Sprintf("GATEWAY_%s_ADDR=%s", strings.ToUpper(svc), s.target(svc)))
		}
		return env
	}
	// Peers are reached through target: both replicas when there are two.
	peer := s.target
	up := strings.ToUpper(name)
	env = append(env,
		up+"_GRPC_ADDR="+own,
		up+"_DATABASE_URL="+s.dbURL[name],
		up+"_LOG_LEVEL=debug",
	)
	if name == "lifecycle" {
		// The queue consumes the archive's retirement and the pause's drain;
		// notification the pushes and their clean-up.
		consumers := "lineage=" + peer("lineage") + ",queue=" + peer("queue") + ",notification=" + peer("notification")
		if s.turns {
			// runner: the clone's clean-up after archive and restore on unarchive.
			consumers += ",runner_turns=" + peer("runner") + ",runner=" + peer("runner")
		}
		env = append(env, "LIFECYCLE_EFFECT_CONSUMERS="+consumers, "LIFECYCLE_NOTIFICATION_ADDR="+peer("notification"),
			"LIFECYCLE_RELAY_POLL_INTERVAL=100ms", "LIFECYCLE_RUNNER_ADDR="+peer("runner"), "LIFECYCLE_QUEUE_ADDR="+peer("queue"))
	}
	if name == "runner" {
		env = append(env, "RUNNER_DEMO_AGENT_PATH="+filepath.Join(s.bin, "zimmer-demo-agent"),
			"RUNNER_WORKSPACES_DIR="+s.nodeWorkspaces(twin), "RUNNER_LIFECYCLE_ADDR="+peer("lifecycle"),
			"RUNNER_MCP_URL=http://"+s.gatewayOf(twin)+"/mcp", "RUNNER_NODE=e2e-"+filepath.Base(s.nodeWorkspaces(twin)),
			"RUNNER_QUEUE_ADDR="+peer("queue"), "RUNNER_LINEAGE_ADDR="+peer("lineage"),
			// A status summary forks a session per pause with new work; the
			// tests about them turn them on (status_summary_test.go), the
			// rest count sessions and turns without forks among them.
			"RUNNER_STATUS_SUMMARIES=false")
	}
	if name == "queue" {
		env = append(env, "QUEUE_LIFECYCLE_ADDR="+peer("lifecycle"), "QUEUE_RUNNER_ADDR="+peer("runner"),
			"QUEUE_LINEAGE_ADDR="+peer("lineage"), "QUEUE_NOTIFICATION_ADDR="+peer("notification"))
	}
	if name == "notification" {
		// A pause is pushed after 2 s rather than a minute, so a test waits
		// for the debounce, not for a default meant for people; pushes go to
		// the log and to the stack's webhook.
		env = append(env, "NOTIFICATION_LIFECYCLE_ADDR="+peer("lifecycle"), "NOTIFICATION_NEEDS_INPUT_DEBOUNCE="+needsInputDebounce.String(),
			"NOTIFICATION_SINKS=log,webhook", "NOTIFICATION_WEBHOOK_URL="+s.webhook.url(), "NOTIFICATION_WEBHOOK_SECRET="+string(s.webhook.secret),
			// Where a Slack message's follow-up and human message go, and
			// the links posted in its thread.
			"NOTIFICATION_QUEUE_ADDR="+peer("queue"), "NOTIFICATION_LINEAGE_ADDR="+peer("lineage"),
			"NOTIFICATION_CONSOLE_URL=http://"+s.addr["gateway"]+"/console/")
	}
	if name == "lineage" {
		env = append(env, "LINEAGE_EVENT_CONSUMERS=lifecycle="+peer("lifecycle"), "LINEAGE_NOTIFICATION_ADDR="+peer("notification"))
	}
	return env
}

// nodeWorkspaces is a runner node's workspaces folder: the stack's, or
// for the replica, a sibling folder (agentWatch.dirs watches both).
func (s *stack) nodeWorkspaces(twin bool) string {
	if twin {
		return s.workspaces + "-2"
	}
	return s.workspaces
}

// gatewayOf is the gateway a runner node's agents reach MCP at: each node
// its own, so that killing one gateway cuts off only its node's agents.
func (s *stack) gatewayOf(twin bool) string {
	if twin {
		return s.addr[replica("gateway")]
	}
	return s.addr["gateway"]
}

// start launches (or relaunches) one process; its output is appended to a
// log file that is printed if the test fails.
func (s *stack) start(name string) {
	s.t.Helper()
	// The extra environment last, so that it wins over the stack's own
	// (exec keeps the last of a name). A replica takes its service's, then
	// its own.
	env := append(s.env(name), s.extraEnv[serviceOf(name)]...)
	if name != serviceOf(name) {
		env = append(env, s.extraEnv[name]...)
	}
	s.launch(name, serviceOf(name), env)
}

// launch starts binary as the stack's process name with env.
func (s *stack) launch(name, binary string, env []string) {
	s.t.Helper()
	logf, err := os.OpenFile(filepath.Join(s.logs, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(s.t, err)
	cmd := exec.Command(filepath.Join(s.bin, binary))
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(s.t, cmd.Start(), "start %s", name)
	s.mu.Lock()
	s.procs[name] = cmd
	s.mu.Unlock()
}

// kill ends a process abruptly, as a crash would.
func (s *stack) kill(name string) {
	s.t.Helper()
	s.mu.Lock()
	cmd := s.procs[name]
	delete(s.procs, name)
	s.mu.Unlock()
	require.NoError(s.t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
	_ = cmd.Wait()
}

// interrupt stops a process as Ctrl-C would and reports how it exited.
func (s *stack) interrupt(name string) error {
	s.mu.Lock()
	cmd := s.procs[name]
	delete(s.procs, name)
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done //nolint:errcheck // killed: its exit status says nothing more than the error below
		return fmt.Errorf("%s ignored SIGINT for 20s and was killed", name)
	}
}

// stopAll stops every process at once: each takes up to its grace to
// drain, and one after another they made up a good part of a short test.
func (s *stack) stopAll() {
	start := time.Now()
	s.mu.Lock()
	var names []string
	for n := range s.procs {
		names = append(names, n)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			if err := s.interrupt(n); err != nil {
				s.t.Errorf("stop %s: %v", n, err)
			}
		})
	}
	wg.Wait()
	s.t.Logf("stack stopped in %s", time.Since(start).Round(time.Millisecond))
	if s.t.Failed() {
		for _, n := range s.processes() {
			b, _ := os.ReadFile(filepath.Join(s.logs, n+".log"))
			s.t.Logf("---- %s log (tail) ----\n%s", n, tail(b, 4000))
		}
	}
}

func (s *stack) waitHealthy(svc string) {
	s.t.Helper()
	conn, err := grpcclient.Dial(s.addr[svc], grpcclient.Anonymous())
	require.NoError(s.t, err)
	defer conn.Close()
	require.Eventually(s.t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}, 60*time.Second, 100*time.Millisecond, "%s never became healthy", svc)
	s.waitGatewayReaches(serviceOf(svc))
}

// waitGatewayReaches waits, when the stack's gateway runs, until it
// reaches svc again: after a restart its connection waits out up to a
// second of reconnect backoff (grpcclient), during which the REST routes
// to svc answer 503, which a test reading right after the restart would
// take for a failure.
func (s *stack) waitGatewayReaches(svc string) {
	s.t.Helper()
	s.mu.Lock()
	_, running := s.procs["gateway"]
	s.mu.Unlock()
	if !running || svc == "gateway" {
		return
	}
	require.Eventually(s.t, func() bool {
		resp, err := http.Get("http://" + s.addr["gateway"] + "/healthz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var rep struct{ Services map[string]string }
		if json.NewDecoder(resp.Body).Decode(&rep) != nil {
			return false
		}
		state, checked := rep.Services[svc]
		return !checked || state == "SERVING" // a service this gateway does not front: nothing to wait for
	}, 60*time.Second, 100*time.Millisecond, "the gateway never reached %s again (its /healthz)", svc)
}

// dial connects to a service's gRPC address as id; the connection closes
// when the test ends.
func (s *stack) dial(svc string, id grpcclient.Identity) *grpc.ClientConn {
	s.t.Helper()
	conn, err := grpcclient.Dial(s.target(svc), id)
	require.NoError(s.t, err)
	s.t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// asAdmin, asOperator and asService are the identities a direct gRPC
// caller can present: make run's key (an admin key), an operator key, or
// a Zimmer service's name with the internal token.
func (s *stack) asAdmin() grpcclient.Identity    { return grpcclient.WithKey(s.apiKey) }
func (s *stack) asOperator() grpcclient.Identity { return grpcclient.WithKey(s.operatorKey) }
func (s *stack) asService(name string) grpcclient.Identity {
	return grpcclient.AsService(name, s.internalToken)
}

func (s *stack) waitGateway() { s.t.Helper(); s.waitGatewayAt(s.addr["gateway"]) }

// waitGatewayAt waits for the gateway at addr (one of a replicated stack's
// two) to answer /healthz.
func (s *stack) waitGatewayAt(addr string) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 100*time.Millisecond, "gateway /healthz never answered 200")
}

// buildBinaries builds every command of the system once per test binary;
// the gateway with the testboundary tag, so that the stack can serve the
// test-only human boundary (nothing else differs).
func buildBinaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zimmer-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		pkgs := []string{"./gateway/cmd/gateway", "./services/runner/cmd/zimmer-demo-agent"}
		for _, svc := range services {
			pkgs = append(pkgs, "./services/"+svc+"/cmd/"+svc)
		}
		cmd := exec.Command("go", append([]string{"build", "-tags", "testboundary", "-o", dir + "/"}, pkgs...)...)
		cmd.Dir = repoRoot(t)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out.String())
		}
		binDir = dir
	})
	require.NoError(t, buildErr)
	return binDir
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

func repoRoot(t *testing.T) string {
	t.Helper()
	if r := os.Getenv("ZIMMER_REPO_ROOT"); r != "" {
		return r
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Dir(wd) // this package lives in <repo>/e2e
}

// logsDir is where a stack's processes write their logs: the test's
// temporary directory, or, when ZIMMER_E2E_KEEP_LOGS names a directory, a
// folder there named after the test, kept after it (the failure dump
// holds only each log's tail; a crash test's evidence is in the rest).
func logsDir(t *testing.T) string {
	root := os.Getenv("ZIMMER_E2E_KEEP_LOGS")
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-"+strconv.FormatInt(time.Now().UnixNano(), 10))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Logf("logs kept in %s", dir)
	return dir
}

func createDatabase(t *testing.T, admin, name string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %q`, name))
	require.NoError(t, err)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), fmt.Sprintf(`DROP DATABASE IF EXISTS %q WITH (FORCE)`, name))
	})
	i := strings.LastIndex(admin, "/")
	rest := admin[i+1:]
	query := ""
	if q := strings.Index(rest, "?"); q >= 0 {
		query = rest[q:]
	}
	return admin[:i+1] + name + query
}

// freeAddr is a loopback address for a process the test starts to listen
// on. The port is checked free here and bound later by the process, so it
// is drawn below the kernel's ephemeral range (ip_local_port_range): an
// outgoing connection, which takes its local port from that range, can never
// take it in between, as one did with ports the kernel chose (a stack's queue
// once found its port in use). handedOut keeps two stacks of this process
// from drawing the same port.
func freeAddr(t *testing.T) string {
	t.Helper()
	low := ephemeralLow()
	for range 1000 {
		port := 10000 + rand.IntN(low-10000)
		if _, taken := handedOut.LoadOrStore(port, true); taken {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		return addr
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return ""
}

var handedOut sync.Map

// ephemeralLow is the low end of the kernel's ephemeral port range (32768
// when it cannot be read, Linux's default).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil || low <= 11000 {
		return 32768
	}
	return low
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
