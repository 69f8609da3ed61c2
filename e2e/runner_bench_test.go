package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/zimmerhq/zimmer/deploy/devstack"
	"github.com/zimmerhq/zimmer/e2e/load"
)

// The runner's measurements (docs/benchmarks.md, "Runner"). They start a
// whole stack whose sessions really run, create hundreds of sessions and take
// minutes, so they run only when asked: ZIMMER_BENCH_RUNNER=1.

// lifecycle's status code for needs_input (domain.StatusNeedsInput).
const statusNeedsInput = 2

func requireRunnerBench(t *testing.T) {
	t.Helper()
	if os.Getenv("ZIMMER_BENCH_RUNNER") != "1" {
		t.Skip("runner measurement: set ZIMMER_BENCH_RUNNER=1 (minutes; see docs/benchmarks.md)")
	}
}

func benchEnvInt(t *testing.T, key string, def int) int {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, key)
	require.Positive(t, n, key)
	return n
}

func benchEnvDuration(t *testing.T, key string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, key)
	require.Positive(t, d, key)
	return d
}

// TestRunnerTurnLatency measures, over ZIMMER_BENCH_RUNNER_SESSIONS (200)
// sessions created one after another, the time from create to the agent
// process started and from the agent's exit to needs_input, next to a bare
// fork/exec of the same demo agent binary with the same prompt, interleaved
// with the sessions so the machine's noise lands on both.
//
// Where the timestamps come from (one host, one clock):
//   - create: the client's clock just before POST /api/v1/sessions;
//   - agent started: the runner's transcript_turns.started_at, Postgres's
//     now() in the transaction that stores the agent's first line (its init
//     line), i.e. the runner has read the first line the process printed;
//     the bare run's is the moment the parent read that line from the pipe;
//   - agent exit: the transaction that stores the agent's last line (its
//     result line, printed just before it returns from main); the bare
//     run's is the moment the parent read that line;
//   - needs_input: lifecycle's sessions.updated_at as the pause wrote it;
//     the bare run's end is cmd.Wait returning (the process reaped).
//
// Also kept: transcript_turns.ended_at, when the runner had reaped the
// process and recorded the turn's end, which splits exit → needs_input into
// the process's exit and the workflow's routing.
func TestRunnerTurnLatency(t *testing.T) {
	requireRunnerBench(t)
	n := benchEnvInt(t, "ZIMMER_BENCH_RUNNER_SESSIONS", 200)
	budget := benchEnvDuration(t, "ZIMMER_BENCH_RUNNER_DURATION", 10*time.Minute)
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	agentBin := filepath.Join(s.bin, "zimmer-demo-agent")
	const prompt = "@demo say measuring the runner"

	bareDir := t.TempDir()
	promptFile := filepath.Join(bareDir, "prompt.txt")
	require.NoError(t, os.WriteFile(promptFile, []byte(prompt), 0o644))

	type sessionRun struct {
		id      int64
		created time.Time
	}
	var sessions []sessionRun
	var bare []bareRun
	runSession := func() sessionRun {
		created := time.Now()
		id := api.createRunning(t, repo, prompt)
		require.Eventually(t, func() bool { return api.session(t, id).Status == "needs_input" },
			60*time.Second, 10*time.Millisecond, "session %d never reached needs_input", id)
		return sessionRun{id: id, created: created}
	}

	// Warm-up, unmeasured: the first turns pay for connections, caches and
	// the workers' first polls.
	for range 5 {
		runSession()
		runBare(t, agentBin, promptFile, repo)
	}
	start := time.Now()
	for i := range n {
		if time.Since(start) > budget {
			t.Logf("stopped at the time budget (%s) after %d sessions", budget, i)
			break
		}
		// Alternate which side goes first, so neither always follows the other.
		if i%2 == 0 {
			sessions = append(sessions, runSession())
			bare = append(bare, runBare(t, agentBin, promptFile, repo))
		} else {
			bare = append(bare, runBare(t, agentBin, promptFile, repo))
			sessions = append(sessions, runSession())
		}
	}
	t.Logf("%d sessions and %d bare runs in %s", len(sessions), len(bare), time.Since(start).Round(time.Second))

	runnerDB := connect(t, s.dbURL["runner"])
	lifecycleDB := connect(t, s.dbURL["lifecycle"])
	tc, err := client.Dial(client.Options{HostPort: s.temporal, Namespace: s.namespace})
	require.NoError(t, err)
	defer tc.Close()
	var hops hopBreakdown
	var toStarted, toNeedsInput, exitToEnded, endedToNeedsInput []time.Duration
	for _, r := range sessions {
		var turns int
		var started, lastLine, ended, needsInput time.Time
		require.NoError(t, runnerDB.QueryRow(t.Context(), `
			SELECT count(*) OVER (), t.started_at, t.ended_at,
			       (SELECT max(l.created_at) FROM transcript_lines l WHERE l.turn_id = t.turn_id)
			FROM transcript_turns t WHERE t.session_id = $1`, r.id).Scan(&turns, &started, &ended, &lastLine))
		require.Equal(t, 1, turns, "session %d ran one turn", r.id)
		var status int
		require.NoError(t, lifecycleDB.QueryRow(t.Context(),
			`SELECT status, updated_at FROM sessions WHERE id = $1`, r.id).Scan(&status, &needsInput))
		require.Equal(t, statusNeedsInput, status, "session %d", r.id)
		hops.addSession(t, tc, r.id, r.created, started)
		toStarted = append(toStarted, started.Sub(r.created))
		toNeedsInput = append(toNeedsInput, needsInput.Sub(lastLine))
		exitToEnded = append(exitToEnded, ended.Sub(lastLine))
		endedToNeedsInput = append(endedToNeedsInput, needsInput.Sub(ended))
	}
	var bareStarted, bareReaped, bareWhole []time.Duration
	for _, b := range bare {
		bareStarted = append(bareStarted, b.firstLine.Sub(b.start))
		bareReaped = append(bareReaped, b.reaped.Sub(b.lastLine))
		bareWhole = append(bareWhole, b.reaped.Sub(b.start))
	}

	started, reaped := dist(toStarted), dist(bareStarted)
	routed, exited := dist(toNeedsInput), dist(bareReaped)
	t.Logf("over %d sessions and %d bare fork/execs of %s, interleaved:", len(sessions), len(bare), filepath.Base(agentBin))
	t.Logf("| measure | p50 | p99 |")
	t.Logf("|---|---|---|")
	t.Logf("| create → agent started (first line stored) | %s | %s |", started.p(50), started.p(99))
	t.Logf("| bare fork/exec → first line read | %s | %s |", reaped.p(50), reaped.p(99))
	t.Logf("| **ratio** | **%.1f×** | **%.1f×** |", ratio(started, reaped, 50), ratio(started, reaped, 99))
	t.Logf("| agent's last line → needs_input | %s | %s |", routed.p(50), routed.p(99))
	t.Logf("| bare last line read → reaped | %s | %s |", exited.p(50), exited.p(99))
	t.Logf("| **ratio** | **%.1f×** | **%.1f×** |", ratio(routed, exited, 50), ratio(routed, exited, 99))
	t.Logf("| of which: last line → turn ended (runner reaped, recorded) | %s | %s |", dist(exitToEnded).p(50), dist(exitToEnded).p(99))
	t.Logf("| of which: turn ended → needs_input (workflow, lifecycle) | %s | %s |", dist(endedToNeedsInput).p(50), dist(endedToNeedsInput).p(99))
	t.Logf("| bare fork/exec → reaped (whole run) | %s | %s |", dist(bareWhole).p(50), dist(bareWhole).p(99))
	hops.log(t, "create → agent started, hop by hop (the session workflow's history; each row from the previous event)")
	stepTimes(t, filepath.Join(s.logs, "runner.log")).log(t, "inside the runner's activities (its debug lines, warm-up included)")
}

// bareRun is one fork/exec of the demo agent by this process, as the runner
// would start it (prompt file, the clone as working directory), timed at
// the start, the first and last lines read from its stdout, and the reap.
type bareRun struct{ start, firstLine, lastLine, reaped time.Time }

func runBare(t *testing.T, agentBin, promptFile, dir string) bareRun {
	t.Helper()
	cmd := exec.Command(agentBin, "--prompt-file", promptFile)
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var r bareRun
	r.start = time.Now()
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		now := time.Now()
		if r.firstLine.IsZero() {
			r.firstLine = now
		}
		r.lastLine = now
	}
	require.NoError(t, sc.Err())
	require.NoError(t, cmd.Wait())
	r.reaped = time.Now()
	require.False(t, r.firstLine.IsZero(), "the demo agent printed nothing")
	return r
}

// TestRunnerSleepingAgents starts ZIMMER_BENCH_RUNNER_AGENTS (500) sessions
// whose demo agents all sleep at once on one runner, measures the runner
// process's CPU (utime+stime from /proc) over ZIMMER_BENCH_RUNNER_WINDOW
// (20 s) while every one of them sleeps, as a share of one core (goal ≤ 5 %),
// and then checks that every one reaches needs_input when they wake.
//
// Each agent is told to sleep until a common wake-up time,
// ZIMMER_BENCH_RUNNER_SLEEP (150 s) after the first create, so the window
// can start once the last one is running; if the ramp has not finished in
// time for a full window before the wake-up, the test says so and fails.
func TestRunnerSleepingAgents(t *testing.T) {
	requireRunnerBench(t)
	n := benchEnvInt(t, "ZIMMER_BENCH_RUNNER_AGENTS", 500)
	window := benchEnvDuration(t, "ZIMMER_BENCH_RUNNER_WINDOW", 20*time.Second)
	sleep := benchEnvDuration(t, "ZIMMER_BENCH_RUNNER_SLEEP", 150*time.Second)
	workers := benchEnvInt(t, "ZIMMER_BENCH_RUNNER_CREATORS", 8)
	const settle = 3 * time.Second
	s := newStackRunning(t, true)
	api := restClient{base: "http://" + s.addr["gateway"], key: s.apiKey}
	repo := gitRepo(t)
	runnerPid := s.pid("runner")
	watched := watchedProcesses(t, s)

	idle := cpuShare(t, runnerPid, window/2)
	t.Logf("runner idle, before any session: %.2f %% of one core over %s", idle*100, window/2)

	rampStart := time.Now()
	wakeAt := rampStart.Add(sleep)
	rampCPU := watched.start(t)
	ids := make([]int64, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				d := time.Until(wakeAt).Round(time.Millisecond)
				ids[i] = api.createRunning(t, repo, fmt.Sprintf("@demo sleep %s", d))
			}
		})
	}
	wg.Wait()
	created := time.Since(rampStart)
	running := 0
	deadline := wakeAt.Add(-window - settle)
	for time.Now().Before(deadline) {
		if running = len(agentProcesses(t, s)); running >= n {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	ramp := time.Since(rampStart)
	t.Logf("created %d sessions in %s (%d creators); %d agents running %s after the first create; CPU during the ramp, share of one core: %s",
		n, created.Round(time.Millisecond), workers, running, ramp.Round(time.Millisecond), rampCPU.shares(t))
	require.GreaterOrEqual(t, running, n,
		"only %d of %d agents were running %s before they wake; raise ZIMMER_BENCH_RUNNER_SLEEP or lower ZIMMER_BENCH_RUNNER_AGENTS", running, n, window+settle)

	time.Sleep(settle)
	windowCPU := watched.start(t)
	share := cpuShare(t, runnerPid, window)
	others := windowCPU.shares(t)
	stillRunning := len(agentProcesses(t, s))
	t.Logf("while %d agents sleep: runner %.2f %% of one core over %s (goal ≤ 5 %%); the window's CPU by process: %s; runner %s",
		stillRunning, share*100, window, others, procStatus(t, runnerPid, "Threads", "VmRSS"))
	require.GreaterOrEqual(t, stillRunning, n, "an agent ended during the window")
	require.Less(t, time.Now(), wakeAt, "the window overran the wake-up: raise ZIMMER_BENCH_RUNNER_SLEEP")

	lifecycleDB := connect(t, s.dbURL["lifecycle"])
	countNeedsInput := func() int {
		var c int
		require.NoError(t, lifecycleDB.QueryRow(t.Context(),
			`SELECT count(*) FROM sessions WHERE id = ANY($1) AND status = $2`, ids, statusNeedsInput).Scan(&c))
		return c
	}
	var done int
	time.Sleep(time.Until(wakeAt))
	wakeCPU := watched.start(t)
	require.Eventually(t, func() bool { done = countNeedsInput(); return done == n },
		time.Until(wakeAt)+3*time.Minute, time.Second, "only %d of %d sessions reached needs_input", done, n)
	var last time.Time
	require.NoError(t, lifecycleDB.QueryRow(t.Context(),
		`SELECT max(updated_at) FROM sessions WHERE id = ANY($1)`, ids).Scan(&last))
	t.Logf("all %d reached needs_input; the last %s after the common wake-up; CPU from the wake-up until all had, share of one core: %s",
		n, last.Sub(wakeAt).Round(time.Millisecond), wakeCPU.shares(t))
}

// cpuMeter compares processes' CPU time with what it was at its start.
type cpuMeter struct {
	names  []string
	pids   map[string]int
	before map[string]time.Duration
	t0     time.Time
}

// watchedProcesses are the stack's processes, and any named in
// ZIMMER_BENCH_RUNNER_PIDS ("temporal=1234,..."): e.g. the Temporal dev
// server, to see what limits a ramp.
func watchedProcesses(t *testing.T, s *stack) cpuMeter {
	t.Helper()
	m := cpuMeter{pids: map[string]int{}}
	for _, name := range []string{"runner", "lifecycle", "gateway", "lineage", "queue", "notification"} {
		m.names = append(m.names, name)
		m.pids[name] = s.pid(name)
	}
	if v := os.Getenv("ZIMMER_BENCH_RUNNER_PIDS"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			name, pid, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(pid)
			require.True(t, ok && err == nil, "ZIMMER_BENCH_RUNNER_PIDS: want name=pid, got %q", kv)
			m.names = append(m.names, name)
			m.pids[name] = n
		}
	}
	return m
}

func (m cpuMeter) start(t *testing.T) cpuMeter {
	t.Helper()
	m.before = map[string]time.Duration{}
	for name, pid := range m.pids {
		c, _, err := devstack.ProcessCPU(pid)
		require.NoError(t, err, name)
		m.before[name] = c
	}
	m.t0 = time.Now()
	return m
}

// shares says each process's CPU since start as a share of one core.
func (m cpuMeter) shares(t *testing.T) string {
	t.Helper()
	elapsed := time.Since(m.t0)
	var out []string
	for _, name := range m.names {
		c, _, err := devstack.ProcessCPU(m.pids[name])
		require.NoError(t, err, name)
		out = append(out, fmt.Sprintf("%s %.1f %%", name, 100*float64(c-m.before[name])/float64(elapsed)))
	}
	return strings.Join(out, ", ")
}

// procStatus reads the named fields of /proc/<pid>/status, e.g. the
// process's thread count and resident memory.
func procStatus(t *testing.T, pid int, fields ...string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if ok && slices.Contains(fields, name) {
			out = append(out, name+" "+strings.Join(strings.Fields(value), " "))
		}
	}
	return strings.Join(out, ", ")
}

// cpuShare is the CPU time pid used over the next window, as a share of one core.
func cpuShare(t *testing.T, pid int, window time.Duration) float64 {
	t.Helper()
	before, _, err := devstack.ProcessCPU(pid)
	require.NoError(t, err)
	t0 := time.Now()
	time.Sleep(window)
	after, _, err := devstack.ProcessCPU(pid)
	require.NoError(t, err)
	return float64(after-before) / float64(time.Since(t0))
}

// agentProcesses lists the pids of every agent process of the stack: those
// whose environment names a clone under its workspaces directory.
func agentProcesses(t *testing.T, s *stack) []string {
	t.Helper()
	marker := "ZIMMER_WORKDIR=" + s.workspaces + string(filepath.Separator)
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or not ours
		}
		if strings.Contains(string(environ), "\x00"+marker) || strings.HasPrefix(string(environ), marker) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func (s *stack) pid(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.procs[name].Process.Pid
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// durations is a sorted sample, read by nearest-rank percentiles.
type durations []time.Duration

func dist(d []time.Duration) durations {
	out := slices.Clone(d)
	slices.Sort(out)
	return out
}

func (d durations) p(pct float64) time.Duration {
	return load.Result{Latencies: d}.Percentile(pct).Round(10 * time.Microsecond)
}

func ratio(a, b durations, pct float64) float64 {
	return float64(a.p(pct)) / float64(b.p(pct))
}
