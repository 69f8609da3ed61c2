package devstack

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ProcessCPU reads what the kernel counted: for this process, what
// getrusage says it used and what its reaped children used, each within
// the ticks' 10 ms and the time between the reads.
func TestProcessCPU(t *testing.T) {
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
	}
	// A child that spins, waited for: its time is the reaped share.
	require.NoError(t, exec.Command("sh", "-c", `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`).Run())
	own, reaped, err := ProcessCPU(os.Getpid())
	require.NoError(t, err)
	usage := func(who int) time.Duration {
		var ru syscall.Rusage
		require.NoError(t, syscall.Getrusage(who, &ru))
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	self, children := usage(syscall.RUSAGE_SELF), usage(syscall.RUSAGE_CHILDREN)
	require.InDelta(t, self.Seconds(), own.Seconds(), 0.1, "ProcessCPU %s, getrusage %s", own, self)
	require.Positive(t, own)
	require.InDelta(t, children.Seconds(), reaped.Seconds(), 0.1, "reaped %s, getrusage of the children %s", reaped, children)
	require.Positive(t, reaped, "the spinning child's time")
	_, _, err = ProcessCPU(-1)
	require.Error(t, err)
}
