package process

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// subreaperEnv makes the test binary, re-run, play the subreaper runner in
// TestZombieReaperSubject instead of testing: PR_SET_CHILD_SUBREAPER then
// stays out of the test runner's process.
const subreaperEnv = "ZIMMER_PROCESS_TEST_SUBREAPER"

// subjectReport is what the subject prints, as JSON after reportPrefix.
type subjectReport struct {
	Orphan int
	// OrphanZombieAfterFirstPass: a first pass left the orphan our zombie
	// (seen once is not reaped).
	OrphanZombieAfterFirstPass bool
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
// binary that becomes a child subreaper: an agent's grandchild, orphaned
// when its leader exits, is reparented to it and dies. The reaper leaves
// that zombie at the first pass and at a second one too soon after, and
// reaps it once MinAge has passed; an os/exec command's zombie (Wait still
// to come) and a Process's leader (its waiter held back) keep their status.
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
	require.True(t, got.OrphanZombieAfterFirstPass, "a zombie seen once is not reaped")
	require.True(t, got.ExecZombieAfterYoungPass, "a zombie seen for less than MinAge is not reaped")
	require.Empty(t, got.ExecWaitErr, "os/exec's Wait kept its child")
	require.Equal(t, 3, got.ExecExitCode)
	require.Equal(t, []int{got.Orphan}, got.Reaped, "only the orphan is reaped")
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
	// An agent whose grandchild outlives it and then dies: our orphan.
	leader, out := startSh(t, `sh -c 'echo orphan $$; sleep 0.3; exit 9' & exit 0`, Options{DrainTimeout: time.Second})
	report.Orphan = pidAfter(t, out.waitFor(t, "orphan "))
	wait(t, leader)
	// A git-like command whose Wait comes later.
	execCmd := exec.Command("sh", "-c", "exit 3")
	require.NoError(t, execCmd.Start())
	require.Eventually(t, func() bool {
		return isZombie(report.Orphan) && isZombie(execCmd.Process.Pid) && isZombie(p.Pid())
	}, 5*time.Second, 10*time.Millisecond, "three zombies of ours")

	reaped, err := reaper.Pass()
	require.NoError(t, err)
	require.Empty(t, reaped)
	report.OrphanZombieAfterFirstPass = isZombie(report.Orphan)
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
