package devstack

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ProcessCPU reads what the kernel counted: for this process, what
// getrusage says it used, within the ticks' 10 ms and the time between
// the two reads.
func TestProcessCPU(t *testing.T) {
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
	}
	own, reaped, err := ProcessCPU(os.Getpid())
	require.NoError(t, err)
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	want := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	require.InDelta(t, want.Seconds(), own.Seconds(), 0.1, "ProcessCPU %s, getrusage %s", own, want)
	require.Positive(t, own)
	require.GreaterOrEqual(t, reaped, time.Duration(0))
	_, _, err = ProcessCPU(-1)
	require.Error(t, err)
}
