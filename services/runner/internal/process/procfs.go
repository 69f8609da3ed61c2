package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// procInfo is what this package reads of /proc/<pid>/stat.
type procInfo struct {
	Pid int
	// State is the one-letter state: R, S, D, Z (zombie), X (dead), …
	State string
	Ppid  int
	Pgrp  int
	// Session is the session id (field 6).
	Session int
	// StartTime is field 22, the time the process started after boot in
	// clock ticks: with the pid it names one process for the life of the
	// machine, so a recycled pid is told from the one recorded.
	StartTime uint64
}

// ended: the process has exited (a zombie waiting for its reap, or dead).
func (s procInfo) ended() bool { return s.State == "Z" || s.State == "X" }

// errNoProcess is a pid no process holds (any more).
var errNoProcess = errors.New("no such process")

// readProcInfo reads /proc/<pid>/stat; errNoProcess when the pid is free.
func readProcInfo(pid int) (procInfo, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return procInfo{}, errNoProcess
	}
	if err != nil {
		return procInfo{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	return parseProcInfo(pid, string(data))
}

// parseProcInfo parses "pid (comm) state ppid pgrp …". comm may hold spaces
// and parentheses, so the fields are counted from its last ')'.
func parseProcInfo(pid int, data string) (procInfo, error) {
	end := strings.LastIndexByte(data, ')')
	if end < 0 || end+2 > len(data) {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: malformed %q", pid, data)
	}
	// f[0] is field 3 (state); field n is f[n-3].
	f := strings.Fields(data[end+2:])
	if len(f) < 20 {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: %d fields after comm, want at least 20", pid, len(f))
	}
	s := procInfo{Pid: pid, State: f[0]}
	var errs []error
	atoi := func(v string) int {
		n, err := strconv.Atoi(v)
		errs = append(errs, err)
		return n
	}
	s.Ppid, s.Pgrp, s.Session = atoi(f[1]), atoi(f[2]), atoi(f[3])
	start, err := strconv.ParseUint(f[22-3], 10, 64)
	s.StartTime = start
	if err := errors.Join(append(errs, err)...); err != nil {
		return procInfo{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return s, nil
}

// listProcs reads every process's stat; a process that ended between the
// listing and its read is skipped.
func listProcs() ([]procInfo, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	out := make([]procInfo, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		s, err := readProcInfo(pid)
		if errors.Is(err, errNoProcess) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// liveMembers lists the processes of group pgid that have not ended:
// a zombie in the group (an orphan waiting for its reaper, which for a
// subreaper runner is the runner itself) runs nothing.
//
// A /proc listing taken while a process is being released can miss a live
// neighbour (seen on Linux 6: an agent's orphan missing from the listing
// taken as its leader was reaped). A listing that shows nobody of a group
// the kernel says is still held (signal 0) was such a misread and is
// taken again, a few times at most.
func liveMembers(pgid int) ([]procInfo, error) {
	const listings = 3
	for n := 1; ; n++ {
		all, err := listProcs()
		if err != nil {
			return nil, err
		}
		var live []procInfo
		held := false
		for _, s := range all {
			if s.Pgrp == pgid {
				held = true
				if !s.ended() {
					live = append(live, s)
				}
			}
		}
		if held || n == listings || errors.Is(unix.Kill(-pgid, 0), unix.ESRCH) {
			return live, nil
		}
	}
}
