package devstack

import (
	"errors"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// crashLog collects a supervisor's reports and the start times of its children.
type crashLog struct {
	mu      sync.Mutex
	crashes []Crash
	starts  []time.Time
	pids    []int
}

func (l *crashLog) record(c Crash) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.crashes = append(l.crashes, c)
}

func (l *crashLog) snapshot() ([]Crash, []time.Time, []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Crash(nil), l.crashes...), append([]time.Time(nil), l.starts...), append([]int(nil), l.pids...)
}

// starter returns a start function running script in sh, recording each start.
func (l *crashLog) starter(script string) func() (*Process, error) {
	return func() (*Process, error) {
		p, err := StartProcess("fake", exec.Command("sh", "-c", script))
		if err == nil {
			l.mu.Lock()
			l.starts = append(l.starts, time.Now())
			l.pids = append(l.pids, p.Pid())
			l.mu.Unlock()
		}
		return p, err
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestSupervisorRestartsWithBackoffThenGivesUp(t *testing.T) {
	t.Parallel()
	var log crashLog
	policy := RestartPolicy{
		InitialBackoff: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond,
		StableAfter: time.Minute, MaxRestarts: 5, Window: time.Minute,
	}
	sup, err := Supervise("fake", log.starter("exit 3"), policy, log.record)
	require.NoError(t, err)

	select {
	case <-sup.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor never gave up")
	}
	require.ErrorContains(t, sup.Err(), "fake keeps crashing")
	require.ErrorContains(t, sup.Err(), "exit status 3")
	require.Zero(t, sup.Pid(), "nothing runs after giving up")

	crashes, starts, _ := log.snapshot()
	require.Len(t, crashes, 6, "five restarts, then the sixth crash gives up")
	require.Len(t, starts, 6, "the first start and five restarts")
	ms := time.Millisecond
	wantDelays := []time.Duration{20 * ms, 40 * ms, 80 * ms, 80 * ms, 80 * ms} // doubling, capped at MaxBackoff
	for i, c := range crashes[:5] {
		require.Equal(t, "fake", c.Name)
		require.Equal(t, "exit status 3", c.ExitText())
		require.NotZero(t, c.Pid)
		require.Equal(t, i+1, c.Restart)
		require.Equal(t, wantDelays[i], c.Delay)
		require.False(t, c.GiveUp)
		require.GreaterOrEqual(t, starts[i+1].Sub(starts[i]), c.Delay, "restart %d waited its back-off", i+1)
	}
	require.True(t, crashes[5].GiveUp)
	require.Zero(t, crashes[5].Delay)
}

func TestSupervisorStableRunResetsBackoff(t *testing.T) {
	t.Parallel()
	var log crashLog
	policy := RestartPolicy{
		InitialBackoff: 10 * time.Millisecond, MaxBackoff: time.Second,
		StableAfter: 100 * time.Millisecond, MaxRestarts: 100, Window: time.Minute,
	}
	sup, err := Supervise("fake", log.starter("sleep 0.3; exit 1"), policy, log.record)
	require.NoError(t, err)
	require.Eventually(t, func() bool { c, _, _ := log.snapshot(); return len(c) >= 3 }, 10*time.Second, 10*time.Millisecond)
	sup.Stop(time.Second)
	require.NoError(t, sup.Err(), "stopped, not given up")

	crashes, _, _ := log.snapshot()
	for _, c := range crashes {
		require.Equal(t, 1, c.Restart, "each run outlived StableAfter, so each crash starts a new streak")
		require.Equal(t, 10*time.Millisecond, c.Delay)
	}
}

func TestSupervisorRestartsAfterKillAndStopsOnlyItsOwnChild(t *testing.T) {
	t.Parallel()
	// Someone else's process: stopping the supervisor must leave it alone.
	bystander, err := StartProcess("bystander", exec.Command("sleep", "60"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = bystander.Stop(time.Second) })

	var log crashLog
	policy := RestartPolicy{
		InitialBackoff: 10 * time.Millisecond, MaxBackoff: time.Second,
		StableAfter: time.Minute, MaxRestarts: 5, Window: time.Minute,
	}
	// A background grandchild shares the child's process group.
	sup, err := Supervise("fake", log.starter("sleep 60 & exec sleep 60"), policy, log.record)
	require.NoError(t, err)
	first := sup.Pid()
	require.NotZero(t, first)

	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
	require.Eventually(t, func() bool { return sup.Pid() != 0 && sup.Pid() != first }, 5*time.Second, 10*time.Millisecond)
	crashes, _, _ := log.snapshot()
	require.Len(t, crashes, 1)
	require.Equal(t, first, crashes[0].Pid)
	require.Equal(t, "signal: killed", crashes[0].ExitText())
	require.Equal(t, 1, crashes[0].Restart)

	second := sup.Pid()
	sup.Stop(time.Second)
	require.NoError(t, sup.Err())
	require.Zero(t, sup.Pid())
	require.Eventually(t, func() bool {
		return errors.Is(syscall.Kill(-second, 0), syscall.ESRCH)
	}, 3*time.Second, 10*time.Millisecond, "the child and its grandchild are gone")
	require.True(t, alive(bystander.Pid()), "a process the supervisor did not start survives")
	crashes, starts, _ := log.snapshot()
	require.Len(t, crashes, 1, "an exit asked for by Stop is not a crash")
	require.Len(t, starts, 2)
	sup.Stop(time.Second) // idempotent
}

func TestSupervisorStopDuringBackoffStartsNothing(t *testing.T) {
	t.Parallel()
	var log crashLog
	policy := RestartPolicy{
		InitialBackoff: time.Hour, MaxBackoff: time.Hour,
		StableAfter: time.Hour, MaxRestarts: 5, Window: time.Hour,
	}
	sup, err := Supervise("fake", log.starter("exit 2"), policy, log.record)
	require.NoError(t, err)
	require.Eventually(t, func() bool { c, _, _ := log.snapshot(); return len(c) == 1 }, 5*time.Second, 10*time.Millisecond)

	stopped := make(chan struct{})
	go func() { sup.Stop(time.Second); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop waited for the back-off")
	}
	_, starts, _ := log.snapshot()
	require.Len(t, starts, 1)
}

func TestSupervisorReportsAFailedRestart(t *testing.T) {
	t.Parallel()
	var log crashLog
	policy := RestartPolicy{
		InitialBackoff: 5 * time.Millisecond, MaxBackoff: 5 * time.Millisecond,
		StableAfter: time.Minute, MaxRestarts: 2, Window: time.Minute,
	}
	starts := 0
	missing := filepath.Join(t.TempDir(), "gone")
	start := func() (*Process, error) {
		starts++ // only the supervisor's goroutine calls it after the first start
		if starts == 1 {
			return StartProcess("fake", exec.Command("sh", "-c", "exit 1"))
		}
		return StartProcess("fake", exec.Command(missing)) // the binary was deleted
	}
	sup, err := Supervise("fake", start, policy, log.record)
	require.NoError(t, err)
	<-sup.Done()
	crashes, _, _ := log.snapshot()
	require.Len(t, crashes, 3)
	require.Equal(t, "exit status 1", crashes[0].ExitText())
	require.Contains(t, crashes[1].ExitText(), "no such file", "a failure to start is reported like a crash")
	require.Zero(t, crashes[1].Pid)
	require.True(t, crashes[2].GiveUp)
}

func TestRestartStateWindow(t *testing.T) {
	t.Parallel()
	s := restartState{policy: RestartPolicy{
		InitialBackoff: time.Second, MaxBackoff: 30 * time.Second,
		StableAfter: time.Hour, MaxRestarts: 2, Window: time.Minute,
	}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n, d, giveUp := s.afterExit(t0, time.Second)
	require.Equal(t, 1, n)
	require.Equal(t, time.Second, d)
	require.False(t, giveUp)
	n, d, giveUp = s.afterExit(t0.Add(10*time.Second), time.Second)
	require.Equal(t, 2, n)
	require.Equal(t, 2*time.Second, d)
	require.False(t, giveUp)
	_, _, giveUp = s.afterExit(t0.Add(20*time.Second), time.Second)
	require.True(t, giveUp, "a third restart within the minute is one too many")
	// Once the first restarts fall out of the window, it restarts again, with
	// the streak's back-off still growing (no run was stable).
	n, d, giveUp = s.afterExit(t0.Add(71*time.Second), time.Second)
	require.False(t, giveUp)
	require.Equal(t, 3, n)
	require.Equal(t, 4*time.Second, d)
}
