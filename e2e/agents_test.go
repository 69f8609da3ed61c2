package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// agentWatch scans /proc for the stack's demo-agent processes every 200 ms
// while a test runs and records every moment one session had two of them
// alive: the one thing recovery must never do. A process is the session's
// agent when its executable is the demo agent, it works in one of the
// stack's workspaces folders (ZIMMER_WORKDIR: other stacks of the test
// binary run the same binary, for sessions with the same ids) and its
// environment names the session (ZIMMER_SESSION_ID, which the runner gives
// every agent process); zombies have exited and do not count.
type agentWatch struct {
	exe  string
	dirs []string // the stack's workspaces folders
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	scans   int
	doubles map[int64]string // session → the first sighting of two
	last    map[int64][]int  // the latest scan: session → agent pids
}

// watchAgents watches the agents working in the stack's workspaces folder
// and in extra folders (a second runner node's).
func watchAgents(t *testing.T, s *stack, extra ...string) *agentWatch {
	t.Helper()
	w := &agentWatch{
		exe:  filepath.Join(s.bin, "zimmer-demo-agent"),
		dirs: append([]string{s.workspaces}, extra...),
		stop: make(chan struct{}), done: make(chan struct{}),
		doubles: map[int64]string{},
	}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			w.record(w.scan())
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(w.halt)
	return w
}

// halt stops the watch (idempotent).
func (w *agentWatch) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// scan maps each session to the pids of its live demo agents.
func (w *agentWatch) scan() map[int64][]int {
	out := map[int64][]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || !strings.HasPrefix(exe, w.exe) || !alive(pid) {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		var session int64
		ours := false
		for kv := range strings.SplitSeq(string(environ), "\x00") {
			if v, ok := strings.CutPrefix(kv, "ZIMMER_SESSION_ID="); ok {
				session, _ = strconv.ParseInt(v, 10, 64)
			}
			if v, ok := strings.CutPrefix(kv, "ZIMMER_WORKDIR="); ok {
				ours = slices.ContainsFunc(w.dirs, func(d string) bool { return strings.HasPrefix(v, d+string(filepath.Separator)) })
			}
		}
		if ours && session != 0 {
			out[session] = append(out[session], pid)
		}
	}
	return out
}

func (w *agentWatch) record(seen map[int64][]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scans++
	w.last = seen
	for id, pids := range seen {
		if len(pids) > 1 {
			if _, known := w.doubles[id]; !known {
				w.doubles[id] = fmt.Sprintf("pids %v at %s", pids, time.Now().UTC().Format("15:04:05.000"))
			}
		}
	}
}

// agents is the latest scan's pids of the session's live agents.
func (w *agentWatch) agents(id int64) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.last[id])
}

// live counts the sessions with a live agent in the latest scan.
func (w *agentWatch) live() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.last)
}

// twoProcesses are the sessions seen with two live agents, each with its
// first sighting.
func (w *agentWatch) twoProcesses() map[int64]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int64]string, len(w.doubles))
	for id, d := range w.doubles {
		out[id] = d
	}
	return out
}

func (w *agentWatch) scanCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.scans
}
