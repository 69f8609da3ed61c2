package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Short graces keep the suite fast. Scripts that ignore SIGTERM exec sleep
// after the trap: an ignored signal stays ignored across exec, and a group of
// one keeps the recorded signals exact.
func testLadder() Ladder {
	return Ladder{TermGrace: 400 * time.Millisecond, KillGrace: 400 * time.Millisecond,
		SweepGrace: 300 * time.Millisecond, Poll: 20 * time.Millisecond}
}

// lines collects delivered output and lets a test wait for a line.
type lines struct {
	mu   sync.Mutex
	all  []Line
	seen chan Line
}

func newLines() *lines { return &lines{seen: make(chan Line, 1024)} }

func (c *lines) add(l Line) {
	c.mu.Lock()
	c.all = append(c.all, l)
	c.mu.Unlock()
	select {
	case c.seen <- l:
	default:
	}
}

func (c *lines) texts(s Stream) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.all {
		if l.Stream == s {
			out = append(out, l.Text)
		}
	}
	return out
}

// waitFor returns the first delivered line starting with prefix, among
// all lines so far: two processes' lines may come in either order, so a
// wait for one must not consume the other's.
func (c *lines) waitFor(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		for _, l := range c.all {
			if strings.HasPrefix(l.Text, prefix) {
				c.mu.Unlock()
				return l.Text
			}
		}
		c.mu.Unlock()
		select {
		case <-c.seen:
		case <-time.After(50 * time.Millisecond): // a wake-up add dropped
		case <-timeout:
			t.Fatalf("no line starting with %q", prefix)
		}
	}
}

func startSh(t *testing.T, script string, opts Options) (*Process, *lines) {
	t.Helper()
	out := newLines()
	if opts.OnLine == nil {
		opts.OnLine = out.add
	}
	if opts.Ladder.TermGrace == 0 {
		opts.Ladder = testLadder()
	}
	p, err := Start(Command{Path: "sh", Args: []string{"sh", "-c", script}}, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		// Leave nothing behind whatever the test did.
		_ = unix.Kill(-p.Pid(), syscall.SIGKILL)
		_, _ = p.Wait(context.Background())
	})
	return p, out
}

func wait(t *testing.T, p *Process) Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e, err := p.Wait(ctx)
	require.NoError(t, err)
	return e
}

func terminate(t *testing.T, p *Process) Termination {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	term, err := p.Terminate(ctx)
	require.NoError(t, err)
	return term
}

// liveGroupMembers lists the processes of group pgid that are not zombies,
// read from /proc. A zombie has ended; only its parent's reap is pending (for
// orphans that is init, which here reaps lazily).
func liveGroupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, group, ok := procStat(pid)
		if ok && group == pgid && state != "Z" && state != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat reads a process's state and process group from /proc/<pid>/stat.
func procStat(pid int) (state string, pgrp int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses.
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	pgrp, err = strconv.Atoi(f[2])
	return f[0], pgrp, err == nil
}

// requireGroupGone checks /proc: no process of group pgid, nor any of pids,
// is alive. A SIGKILLed process runs no more user code once the signal is
// pending, but leaves /proc only when the kernel has scheduled its exit, so
// that last step is given a moment.
func requireGroupGone(t *testing.T, pgid int, pids ...int) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, pid := range pids {
			if processAlive(pid) {
				return false
			}
		}
		return len(liveGroupMembers(t, pgid)) == 0
	}, 500*time.Millisecond, 5*time.Millisecond, "a process of group %d survived", pgid)
}

func processAlive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z" && state != "X"
}

func TestExitCodeAndOutput(t *testing.T) {
	t.Parallel()
	p, out := startSh(t, `echo out1; echo err1 >&2; echo out2; echo err2 >&2; exit 3`, Options{})
	e := wait(t, p)

	require.Equal(t, 3, e.Code)
	require.False(t, e.Signaled())
	require.True(t, e.StatusKnown)
	require.False(t, e.TerminateRequested)
	require.Equal(t, "exit status 3", e.String())
	require.Equal(t, []string{"out1", "out2"}, out.texts(Stdout))
	require.Equal(t, []string{"err1", "err2"}, out.texts(Stderr))
	require.Equal(t, []string{"err1", "err2"}, e.StderrTail)
	require.Zero(t, e.DroppedLines)
	require.False(t, e.OutputCut)
}

func TestExitZeroWithStdin(t *testing.T) {
	t.Parallel()
	out := newLines()
	p, err := Start(Command{Path: "cat", Stdin: []byte("hello\nworld")}, Options{OnLine: out.add})
	require.NoError(t, err)
	e := wait(t, p)
	require.Equal(t, 0, e.Code)
	require.Equal(t, []string{"hello", "world"}, out.texts(Stdout))
}

func TestStdinNeverReadDoesNotHang(t *testing.T) {
	t.Parallel()
	// Far more than a pipe holds, to a child that never reads it.
	p, err := Start(Command{Path: "true", Stdin: make([]byte, 4<<20)}, Options{})
	require.NoError(t, err)
	require.Equal(t, 0, wait(t, p).Code)
}

// An open stdin takes lines while the child lives (an agent's answers),
// and refuses them once it is gone.
func TestKeepStdinOpenTakesInputUntilExit(t *testing.T) {
	t.Parallel()
	out := newLines()
	p, err := Start(Command{Path: "sh", Args: []string{"sh", "-c", "read a; echo got $a; read b; echo got $b"}, KeepStdinOpen: true},
		Options{OnLine: out.add})
	require.NoError(t, err)
	require.NoError(t, p.WriteInput([]byte("one\n")))
	out.waitFor(t, "got one")
	require.NoError(t, p.WriteInput([]byte("two\n")))
	require.Equal(t, 0, wait(t, p).Code)
	require.Equal(t, []string{"got one", "got two"}, out.texts(Stdout))
	require.Eventually(t, func() bool { return errors.Is(p.WriteInput([]byte("late\n")), ErrNoInput) },
		5*time.Second, 10*time.Millisecond, "the leader's exit closes the input")

	_, err = Start(Command{Path: "cat", Stdin: []byte("x"), KeepStdinOpen: true}, Options{})
	require.ErrorContains(t, err, "KeepStdinOpen takes no Stdin")
	closed, err := Start(Command{Path: "true"}, Options{})
	require.NoError(t, err)
	require.ErrorIs(t, closed.WriteInput([]byte("x")), ErrNoInput, "a stdin not kept open takes nothing")
	wait(t, closed)
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	_, err := Start(Command{Path: "zimmer-no-such-program"}, Options{})
	require.ErrorIs(t, err, exec.ErrNotFound)
	_, err = Start(Command{Path: "/nonexistent/agent"}, Options{})
	require.ErrorIs(t, err, syscall.ENOENT)
	_, err = Start(Command{Path: "sh", Dir: "/nonexistent-dir"}, Options{})
	require.Error(t, err)
}

func TestSignalDeathNotSentByUs(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSEGV, syscall.SIGTERM} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			t.Parallel()
			p, _ := startSh(t, fmt.Sprintf("ulimit -c 0; kill -%d $$", sig), Options{})
			e := wait(t, p)
			require.Equal(t, sig, e.Signal)
			require.Equal(t, -1, e.Code)
			require.False(t, e.SignalSentByUs, "nobody asked Zimmer to send it")
			require.Contains(t, e.String(), "not sent by Zimmer")
		})
	}
}

func TestTerminateEndsAtSIGTERMFast(t *testing.T) {
	t.Parallel()
	ladder := testLadder()
	ladder.TermGrace = 5 * time.Second // ending early proves the exit is noticed at once
	p, out := startSh(t, `echo ready; exec sleep 30`, Options{Ladder: ladder})
	out.waitFor(t, "ready")

	term := terminate(t, p)
	require.Equal(t, RungTerm, term.Rung)
	require.False(t, term.LeaderSignalled)
	require.False(t, term.Swept, "the group was empty once the leader died")
	require.Less(t, term.Duration, time.Second)

	e := wait(t, p)
	require.Equal(t, syscall.SIGTERM, e.Signal)
	require.True(t, e.SignalSentByUs)
	require.True(t, e.TerminateRequested)
	require.Equal(t, "killed by SIGTERM, sent by Zimmer", e.String())
}

func TestTerminateEscalatesToSIGKILL(t *testing.T) {
	t.Parallel()
	p, out := startSh(t, `trap "" TERM; echo ready; exec sleep 30`, Options{})
	out.waitFor(t, "ready")

	term := terminate(t, p)
	require.Equal(t, RungKill, term.Rung)
	require.GreaterOrEqual(t, term.Duration, testLadder().TermGrace)
	require.Less(t, term.Duration, 3*time.Second)

	e := wait(t, p)
	require.Equal(t, syscall.SIGKILL, e.Signal)
	require.True(t, e.SignalSentByUs)
	requireGroupGone(t, p.Pid())
}

func TestTerminateSweepsGrandchildThatOutlivesLeader(t *testing.T) {
	t.Parallel()
	// The leader dies at SIGTERM; its child ignores SIGTERM and keeps the
	// output pipes open: only the sweep can end it.
	p, out := startSh(t, `sh -c 'trap "" TERM; echo grandchild $$; exec sleep 30' & exec sleep 30`,
		Options{DrainTimeout: 5 * time.Second})
	grandchild, err := strconv.Atoi(strings.TrimPrefix(out.waitFor(t, "grandchild "), "grandchild "))
	require.NoError(t, err)
	require.True(t, processAlive(grandchild))

	term := terminate(t, p)
	require.Equal(t, RungTerm, term.Rung)
	require.True(t, term.Swept)
	require.GreaterOrEqual(t, term.Duration, testLadder().SweepGrace)

	requireGroupGone(t, p.Pid(), grandchild)
	e := wait(t, p)
	require.Equal(t, syscall.SIGTERM, e.Signal)
	require.False(t, e.OutputCut, "the pipes closed when the sweep killed their last holder")
}

func TestSurvivorHoldingPipesCutsOutputAndTerminateSweepsIt(t *testing.T) {
	t.Parallel()
	p, out := startSh(t, `sh -c 'echo grandchild $$; exec sleep 30' & echo bye; exit 0`,
		Options{DrainTimeout: 200 * time.Millisecond})
	grandchild, err := strconv.Atoi(strings.TrimPrefix(out.waitFor(t, "grandchild "), "grandchild "))
	require.NoError(t, err)

	start := time.Now()
	e := wait(t, p)
	require.Less(t, time.Since(start), 3*time.Second, "Wait does not hang on the survivor")
	require.Equal(t, 0, e.Code)
	require.True(t, e.OutputCut)
	require.Contains(t, out.texts(Stdout), "bye")
	require.True(t, processAlive(grandchild))

	// The leader is long reaped; Terminate still clears its group.
	term := terminate(t, p)
	require.Equal(t, RungAlreadyEnded, term.Rung)
	requireGroupGone(t, p.Pid(), grandchild)
}

// recorder is a KillFunc that records every signal (not the signal-0
// probes) and whether the leader had already been reaped when a signal
// addressed its pid.
type recorder struct {
	mu      sync.Mutex
	p       *Process
	calls   []string
	reaped  []string // signals sent to the leader's pid after its reap
	refuse  bool     // refuse group signals, as for a group that is not ours
	started chan struct{}
}

func newRecorder() *recorder { return &recorder{started: make(chan struct{})} }

func (r *recorder) kill(pid int, sig syscall.Signal) error {
	if pid > 0 {
		// Signals to the leader are sent under leader.mu, so gone is stable.
		<-r.started
		if r.p.leader.gone {
			r.mu.Lock()
			r.reaped = append(r.reaped, fmt.Sprintf("%d:%d", pid, sig))
			r.mu.Unlock()
		}
	}
	if sig != 0 {
		r.mu.Lock()
		r.calls = append(r.calls, fmt.Sprintf("%s %s", target(pid), unix.SignalName(sig)))
		r.mu.Unlock()
	}
	if pid < 0 && r.refuse {
		return syscall.EPERM
	}
	return unix.Kill(pid, sig)
}

func target(pid int) string {
	if pid < 0 {
		return "group"
	}
	return "leader"
}

func (r *recorder) start(t *testing.T, script string, opts Options) (*Process, *lines) {
	t.Helper()
	opts.Ladder = testLadder()
	opts.Ladder.KillFunc = r.kill
	p, out := startSh(t, script, opts)
	r.p = p
	close(r.started)
	return p, out
}

func (r *recorder) snapshot() (calls, reaped []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...), append([]string(nil), r.reaped...)
}

func TestLadderNeverSignalsAReapedPid(t *testing.T) {
	t.Parallel()
	t.Run("already reaped before Terminate", func(t *testing.T) {
		t.Parallel()
		r := newRecorder()
		p, _ := r.start(t, `exit 0`, Options{})
		wait(t, p)
		require.Equal(t, RungAlreadyEnded, terminate(t, p).Rung)
		calls, reaped := r.snapshot()
		require.Empty(t, reaped)
		require.Equal(t, []string{"group SIGTERM"}, calls, "only the (empty) group is addressed")
	})
	t.Run("dies at the group SIGTERM", func(t *testing.T) {
		t.Parallel()
		r := newRecorder()
		p, out := r.start(t, `echo ready; exec sleep 30`, Options{})
		out.waitFor(t, "ready")
		require.Equal(t, RungTerm, terminate(t, p).Rung)
		calls, reaped := r.snapshot()
		require.Empty(t, reaped)
		require.Equal(t, []string{"group SIGTERM"}, calls)
	})
	t.Run("group refused: leader signalled alone, once", func(t *testing.T) {
		t.Parallel()
		r := newRecorder()
		r.refuse = true
		p, out := r.start(t, `echo ready; exec sleep 30`, Options{})
		out.waitFor(t, "ready")
		term := terminate(t, p)
		require.Equal(t, RungTerm, term.Rung)
		require.True(t, term.LeaderSignalled)
		calls, reaped := r.snapshot()
		require.Empty(t, reaped)
		require.Equal(t, []string{"group SIGTERM", "leader SIGTERM"}, calls)
		e := wait(t, p)
		require.Equal(t, syscall.SIGTERM, e.Signal)
		require.True(t, e.SignalSentByUs)
	})
	t.Run("group refused and SIGTERM ignored: the group never downgrades the kill", func(t *testing.T) {
		t.Parallel()
		r := newRecorder()
		r.refuse = true
		p, out := r.start(t, `trap "" TERM; echo ready; exec sleep 30`, Options{})
		out.waitFor(t, "ready")
		term := terminate(t, p)
		require.Equal(t, RungKill, term.Rung)
		calls, reaped := r.snapshot()
		require.Empty(t, reaped)
		require.Equal(t, []string{"group SIGTERM", "leader SIGTERM", "group SIGKILL", "leader SIGKILL"}, calls)
		require.True(t, wait(t, p).SignalSentByUs)
	})
}

func TestConcurrentTerminateWalksTheLadderOnce(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	p, out := r.start(t, `trap "" TERM; echo ready; exec sleep 30`, Options{})
	out.waitFor(t, "ready")

	const callers = 8
	results := make([]Termination, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { results[i] = terminate(t, p) })
	}
	wg.Wait()
	for _, res := range results {
		require.Equal(t, results[0], res)
	}
	require.Equal(t, RungKill, results[0].Rung)
	calls, reaped := r.snapshot()
	require.Empty(t, reaped)
	// One walk: each rung once. The leader may still be alive (not yet
	// scheduled to die) right after the group SIGKILL, so it may get its own.
	if len(calls) == 3 {
		require.Equal(t, "leader SIGKILL", calls[2])
		calls = calls[:2]
	}
	require.Equal(t, []string{"group SIGTERM", "group SIGKILL"}, calls)
}

func TestTerminateCallerContextBoundsOnlyItsWait(t *testing.T) {
	t.Parallel()
	p, out := startSh(t, `trap "" TERM; echo ready; exec sleep 30`, Options{})
	out.waitFor(t, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.Terminate(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The walk went on without that caller.
	require.Equal(t, RungKill, terminate(t, p).Rung)
	require.Equal(t, syscall.SIGKILL, wait(t, p).Signal)
}

func TestSlowConsumerNeverBlocksTheChild(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	var delivered, dropped int
	onLine := func(l Line) {
		<-release
		mu.Lock()
		delivered++
		dropped += l.DroppedBefore
		mu.Unlock()
	}
	const total = 100000 // ~600 KB: far more than a pipe buffer
	p, _ := startSh(t, fmt.Sprintf("seq 1 %d", total), Options{OnLine: onLine, MaxBufferedBytes: 4096})

	select {
	case <-p.leader.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the child was blocked by a consumer that reads nothing")
	}
	close(release)
	e := wait(t, p)
	require.Equal(t, 0, e.Code)
	require.Positive(t, e.DroppedLines)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, total, delivered+e.DroppedLines)
	require.LessOrEqual(t, dropped, e.DroppedLines)
}

func TestLongLinesAreCut(t *testing.T) {
	t.Parallel()
	p, out := startSh(t, `head -c 5000 /dev/zero | tr '\0' x; echo; echo short`, Options{MaxLineBytes: 1000})
	wait(t, p)
	out.mu.Lock()
	defer out.mu.Unlock()
	require.Len(t, out.all, 2)
	require.Equal(t, strings.Repeat("x", 1000), out.all[0].Text)
	require.True(t, out.all[0].Truncated)
	require.Equal(t, Line{Stream: Stdout, Text: "short"}, out.all[1])
}

func TestReadLines(t *testing.T) {
	t.Parallel()
	type got struct {
		text string
		cut  bool
	}
	tests := []struct {
		name, in string
		max      int
		want     []got
	}{
		{"empty", "", 10, nil},
		{"last line without newline", "a\nb", 10, []got{{"a", false}, {"b", false}}},
		{"blank lines kept", "\n\nx\n", 10, []got{{"", false}, {"", false}, {"x", false}}},
		{"exactly max", "abcd\n", 4, []got{{"abcd", false}}},
		{"cut", "abcdef\ngh\n", 4, []got{{"abcd", true}, {"gh", false}}},
		{"cut at EOF", "abcdef", 4, []got{{"abcd", true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var all []got
			readLines(strings.NewReader(tt.in), tt.max, func(s string, cut bool) { all = append(all, got{s, cut}) })
			require.Equal(t, tt.want, all)
		})
	}
}

func TestLivenessFallsBackToSignalZeroOnECHILD(t *testing.T) {
	t.Parallel()
	// pid 1 is not our child: waitpid says ECHILD, signal 0 says alive.
	require.True(t, newLeader(1, unix.Kill).alive())

	// A pid no process can have (above the kernel's largest pid_max):
	// ECHILD, then ESRCH.
	l := newLeader(1<<22+1, unix.Kill)
	require.False(t, l.alive())
	require.False(t, l.exit().StatusKnown)
	require.ErrorIs(t, l.signal(syscall.SIGTERM), errReaped, "a gone pid is never signalled")
}

func TestEnvLastDuplicateWins(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"B=2", "A=3", "C"}, dedupEnv([]string{"A=1", "B=2", "A=3", "C"}))

	out := newLines()
	p, err := Start(Command{Path: "sh", Args: []string{"sh", "-c", `echo "$ZIMMER_X"`},
		Env: []string{"PATH=" + os.Getenv("PATH"), "ZIMMER_X=base", "ZIMMER_X=override"}}, Options{OnLine: out.add})
	require.NoError(t, err)
	wait(t, p)
	require.Equal(t, []string{"override"}, out.texts(Stdout))
}
