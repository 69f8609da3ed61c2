package devstack

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's CPU times (USER_HZ), 100 on
// every Linux platform Go supports.
const clockTick = 10 * time.Millisecond

// ProcessCPU is the processor time (user and system) a live process pid
// has used so far, read from /proc (Linux only) to a resolution of 10 ms:
// its own, and that of the children it has waited for (a postmaster's
// reaped backends, go test's test binaries).
func ProcessCPU(pid int) (own, reaped time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// utime, stime, cutime and cstime are fields 14 to 17, the 12th to
	// 15th after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	var ticks [4]int64
	for j := range ticks {
		if ticks[j], err = strconv.ParseInt(f[11+j], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
	}
	return time.Duration(ticks[0]+ticks[1]) * clockTick, time.Duration(ticks[2]+ticks[3]) * clockTick, nil
}
