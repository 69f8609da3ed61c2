package process

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// subreaperEnv makes the test binary, re-run, play the subreaper runner in
// TestZombieReaperSubject instead of testing: PR_SET_CHILD_SUBREAPER then
// stays out of the test runner's process.
const subreaperEnv = "ZIMMER_PROCESS_TEST_SUBREAPER"

// subjectReport is what the subject prints, as JSON after reportPrefix.
type subjectReport struct {
	// Orphan stayed in its agent's group; Escaped left it (setsid).
	Orphan, Escaped int
	// FirstPass is what the first pass reaped.
	FirstPass []int
	// EscapedZombieAfterFirstPass: a first pass left the escaped orphan our
	// zombie (seen once is not reaped).
	EscapedZombieAfterFirstPass bool
	// ExecZombieAfterYoungPass: a second pass, sooner than MinAge after
	// the first, left os/exec's zombie alone.
	ExecZombieAfterYoungPass bool
	// ExecExitCode is what os/exec's Wait got ("" ExecWaitErr: its status).
	ExecExitCode int
	ExecWaitErr  string
	// Reaped by the pass MinAge later.
	Reaped []int
	// The Process whose leader was a zombie through every pass, its waiter
	// held back: it still gets the status.
	LeaderExitCode int
	LeaderStatus   bool
}

const reportPrefix = "REPORT "

// TestZombieReaperReapsOnlyOrphans runs the subject in a child of the test
// binary that becomes a child subreaper: an agent's grandchildren, orphaned
// when its leader exits, are reparented to it and die. The one still in the
// agent's group is reaped at the first pass. The one that left it (setsid)
// could be anyone's, so the reaper leaves it at the first pass and at a
// second one too soon after, and reaps it once MinAge has passed; an
// os/exec command's zombie (Wait still to come) and a Process's leader
// (its waiter held back) keep their status.
func TestZombieReaperReapsOnlyOrphans(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestZombieReaperSubject$", "-test.count=1")
	cmd.Env = append(os.Environ(), subreaperEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "subject: %s", out)
	var got subjectReport
	found := false
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, reportPrefix); ok {
			require.NoError(t, json.Unmarshal([]byte(rest), &got))
			found = true
		}
	}
	require.True(t, found, "subject: %s", out)

	require.Positive(t, got.Orphan)
	require.Positive(t, got.Escaped)
	require.Equal(t, []int{got.Orphan}, got.FirstPass, "an agent's orphan is reaped at once, and nothing else")
	require.True(t, got.EscapedZombieAfterFirstPass, "a zombie outside the agents' groups seen once is not reaped")
	require.True(t, got.ExecZombieAfterYoungPass, "a zombie seen for less than MinAge is not reaped")
	require.Empty(t, got.ExecWaitErr, "os/exec's Wait kept its child")
	require.Equal(t, 3, got.ExecExitCode)
	require.Equal(t, []int{got.Escaped}, got.Reaped, "only the escaped orphan is reaped")
	require.True(t, got.LeaderStatus, "the Process's waiter kept its leader's status")
	require.Equal(t, 5, got.LeaderExitCode)
}

// TestZombieReaperSubject is the subject's side (see subreaperEnv).
func TestZombieReaperSubject(t *testing.T) {
	if os.Getenv(subreaperEnv) != "1" {
		t.Skip("run by TestZombieReaperReapsOnlyOrphans in a child process")
	}
	require.NoError(t, SetChildSubreaper())
	const minAge = 300 * time.Millisecond
	reaper := &ZombieReaper{MinAge: minAge}
	var report subjectReport
	isZombie := func(pid int) bool {
		info, err := readProcInfo(pid)
		return err == nil && info.State == "Z" && info.Ppid == os.Getpid()
	}

	// A Process whose waiter is held back: its leader stays a zombie.
	p, err := Start(Command{Path: "sh", Args: []string{"sh", "-c", "sleep 0.2; exit 5"}}, Options{})
	require.NoError(t, err)
	p.leader.mu.Lock()
	// An agent whose grandchildren outlive it and then die: our orphans,
	// one in the agent's group, one that left it for a session of its own.
	leader, out := startSh(t, `sh -c 'echo orphan $$; sleep 0.3; exit 9' &
setsid -f sh -c 'echo escaped $$; sleep 0.3; exit 8'
exit 0`, Options{DrainTimeout: 5 * time.Second})
	report.Orphan = pidAfter(t, out.waitFor(t, "orphan "))
	report.Escaped = pidAfter(t, out.waitFor(t, "escaped "))
	wait(t, leader)
	// A git-like command whose Wait comes later.
	execCmd := exec.Command("sh", "-c", "exit 3")
	require.NoError(t, execCmd.Start())
	require.Eventually(t, func() bool {
		return isZombie(report.Orphan) && isZombie(report.Escaped) && isZombie(execCmd.Process.Pid) && isZombie(p.Pid())
	}, 5*time.Second, 10*time.Millisecond, "four zombies of ours")

	reaped, err := reaper.Pass()
	require.NoError(t, err)
	for _, r := range reaped {
		report.FirstPass = append(report.FirstPass, r.Pid)
	}
	report.EscapedZombieAfterFirstPass = isZombie(report.Escaped)
	reaped, err = reaper.Pass()
	require.NoError(t, err)
	require.Empty(t, reaped)
	report.ExecZombieAfterYoungPass = isZombie(execCmd.Process.Pid)

	// os/exec's waiter comes within moments, as it does.
	if werr := execCmd.Wait(); werr != nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			report.ExecExitCode = ee.ExitCode()
		} else {
			report.ExecWaitErr = werr.Error()
		}
	}
	time.Sleep(minAge + 100*time.Millisecond)
	reaped, err = reaper.Pass()
	require.NoError(t, err)
	for _, r := range reaped {
		report.Reaped = append(report.Reaped, r.Pid)
	}
	p.leader.mu.Unlock()
	e := wait(t, p)
	report.LeaderExitCode, report.LeaderStatus = e.Code, e.StatusKnown

	data, err := json.Marshal(report)
	require.NoError(t, err)
	_, _ = os.Stdout.Write([]byte(reportPrefix + string(data) + "\n"))
}

// runSubjectEnv makes the test binary, re-run, play the subreaper runner in
// TestZombieReaperRunSubject.
const runSubjectEnv = "ZIMMER_PROCESS_TEST_RUN_SUBREAPER"

// runReport is what TestZombieReaperRunSubject prints after reportPrefix.
type runReport struct {
	Orphan int
	// ReapedAfter is how long after its SIGKILL the orphan was reaped.
	ReapedAfter time.Duration
	Reported    []int
}

// TestZombieReaperRunReapsAnOrphanWhenItDies: with Run going, an agent's
// grandchild that outlived its leader and is then killed is reaped at once
// (its SIGCHLD drives a pass), not at the next scheduled pass.
func TestZombieReaperRunReapsAnOrphanWhenItDies(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestZombieReaperRunSubject$", "-test.count=1")
	cmd.Env = append(os.Environ(), runSubjectEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "subject: %s", out)
	var got runReport
	found := false
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, reportPrefix); ok {
			require.NoError(t, json.Unmarshal([]byte(rest), &got))
			found = true
		}
	}
	require.True(t, found, "subject: %s", out)
	require.Positive(t, got.Orphan)
	require.Less(t, got.ReapedAfter, 2*time.Second, "reaped when it died")
	require.Equal(t, []int{got.Orphan}, got.Reported)
}

// TestZombieReaperRunSubject is the subject's side (see runSubjectEnv).
func TestZombieReaperRunSubject(t *testing.T) {
	if os.Getenv(runSubjectEnv) != "1" {
		t.Skip("run by TestZombieReaperRunReapsAnOrphanWhenItDies in a child process")
	}
	require.NoError(t, SetChildSubreaper())
	// MinAge far beyond the test: only the agents' groups rule can reap.
	reaper := &ZombieReaper{MinAge: time.Hour}
	var (
		mu       sync.Mutex
		reported []int
	)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		reaper.Run(ctx, func(r []Reaped, err error) {
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			for _, z := range r {
				reported = append(reported, z.Pid)
			}
		})
	}()
	leader, out := startSh(t, `sh -c 'echo orphan $$; exec sleep 60' & exit 0`, Options{DrainTimeout: 100 * time.Millisecond})
	var report runReport
	report.Orphan = pidAfter(t, out.waitFor(t, "orphan "))
	wait(t, leader)
	require.Eventually(t, func() bool {
		info, err := readProcInfo(report.Orphan)
		return err == nil && info.Ppid == os.Getpid()
	}, 5*time.Second, 10*time.Millisecond, "the orphan is ours")
	killed := time.Now()
	require.NoError(t, unix.Kill(report.Orphan, unix.SIGKILL))
	require.Eventually(t, func() bool {
		_, err := readProcInfo(report.Orphan)
		return errors.Is(err, errNoProcess)
	}, 10*time.Second, 5*time.Millisecond, "the orphan's zombie is reaped")
	report.ReapedAfter = time.Since(killed)
	cancel()
	<-ran
	mu.Lock()
	report.Reported = reported
	mu.Unlock()

	data, err := json.Marshal(report)
	require.NoError(t, err)
	_, _ = os.Stdout.Write([]byte(reportPrefix + string(data) + "\n"))
}

// BenchmarkZombiePass: a pass over a node with 200 live children and no
// zombie, as in a burst's SIGCHLDs (issue 21). "listing" is what every pass
// did before it asked the kernel first: read every process's stat.
func BenchmarkZombiePass(b *testing.B) {
	for range 200 {
		cmd := exec.Command("sleep", "600")
		require.NoError(b, cmd.Start())
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	z := &ZombieReaper{}
	b.Run("listing", func(b *testing.B) {
		for b.Loop() {
			if _, err := listProcs(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pass", func(b *testing.B) {
		for b.Loop() {
			if _, err := z.Pass(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestZombiePassListsProcessesOnlyForAZombie: a pass that finds no zombie
// child reads nothing of /proc (issue 21: the listing at every SIGCHLD was
// half the runner's CPU in a burst); one with a zombie child still does.
func TestZombiePassListsProcessesOnlyForAZombie(t *testing.T) {
	// Not parallel: another test's zombie child would be this one's.
	lists := 0
	z := &ZombieReaper{list: func() ([]procInfo, error) { lists++; return listProcs() }}
	live := exec.Command("sleep", "60")
	require.NoError(t, live.Start())
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	_, err := z.Pass()
	require.NoError(t, err)
	require.Zero(t, lists, "a pass with live children only listed /proc")

	ended := exec.Command("true")
	require.NoError(t, ended.Start())
	require.Eventually(t, func() bool {
		s, err := readProcInfo(ended.Process.Pid)
		return err == nil && s.ended()
	}, 5*time.Second, 5*time.Millisecond)
	_, err = z.Pass()
	require.NoError(t, err)
	require.Equal(t, 1, lists, "a pass with a zombie child must look at it")
	require.NoError(t, ended.Wait(), "the pass left os/exec's zombie to its waiter")
}
