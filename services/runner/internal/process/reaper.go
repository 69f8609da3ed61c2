package process

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// SetChildSubreaper makes the calling process a child subreaper
// (PR_SET_CHILD_SUBREAPER): a process whose parent dies is reparented to
// it rather than to init, so an agent's grandchildren that escaped their
// group stay in reach, and when they end they are its zombies, which
// ReapZombies collects. The runner calls it once at start.
func SetChildSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become a child subreaper: %w", err)
	}
	return nil
}

// registry holds the pids of the leaders this package started and has not
// reaped yet: ReapZombies never touches them, as their waiters collect
// their status. fork holds forkMu shared, a reaper pass holds it
// exclusively, so no pass runs between a fork and its registration.
type registry struct {
	forkMu sync.RWMutex
	mu     sync.Mutex
	pids   map[int]struct{}
}

var children = &registry{pids: map[int]struct{}{}}

func (r *registry) fork(start func() (int, error)) (int, error) {
	r.forkMu.RLock()
	defer r.forkMu.RUnlock()
	pid, err := start()
	if err == nil {
		r.mu.Lock()
		r.pids[pid] = struct{}{}
		r.mu.Unlock()
	}
	return pid, err
}

func (r *registry) remove(pid int) {
	r.mu.Lock()
	delete(r.pids, pid)
	r.mu.Unlock()
}

func (r *registry) has(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.pids[pid]
	return ok
}

// DefaultZombieAge is how long a child must have been seen a zombie before
// ReapZombies reaps it.
const DefaultZombieAge = 10 * time.Second

// ZombieReaper reaps zombie children that no live waiter owns. The runner
// reaps its children in two places: this package's leaders (their waiter,
// see the package doc) and os/exec's commands (git, in the workspace
// package), whose Wait collects the status a moment after the exit. A
// zombie of either is someone's to collect, and reaping it would steal the
// status the waiter needs (the spec's ZombieReaperJob lesson). So a zombie
// is reaped only when
//   - it is not a leader this package started and has not reaped
//     (the registry, checked under the lock that orders forks and passes),
//   - and an earlier pass saw it, the same process (pid and start time),
//     already a zombie at least MinAge before: a waiter collects its
//     zombie within moments, so one that stays a zombie that long has none.
//
// What is left are the orphans reparented to the runner as a subreaper
// (SetChildSubreaper), which nobody else would ever wait for. A pass only
// waits for pids it picked (wait4 on each, WNOHANG), never for any child.
type ZombieReaper struct {
	// MinAge is how long a zombie must have been seen before it is reaped
	// (DefaultZombieAge when 0).
	MinAge time.Duration

	mu   sync.Mutex
	seen map[int]sighting
}

type sighting struct {
	startTime uint64
	at        time.Time
}

// Reaped is a zombie a pass collected.
type Reaped struct {
	Pid    int
	Status unix.WaitStatus
}

var defaultReaper = &ZombieReaper{}

// ReapZombies runs one pass of the process's own ZombieReaper (the one the
// runner's zombie-reaper schedule drives): see ZombieReaper.
func ReapZombies() ([]Reaped, error) { return defaultReaper.Pass() }

// Pass reaps the zombies seen long enough and remembers the others.
func (z *ZombieReaper) Pass() ([]Reaped, error) {
	minAge := z.MinAge
	if minAge <= 0 {
		minAge = DefaultZombieAge
	}
	// No fork is registered mid-pass: a pid read as unregistered below is
	// not a leader just started.
	children.forkMu.Lock()
	defer children.forkMu.Unlock()
	procs, err := listProcs()
	if err != nil {
		return nil, err
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	now, self := time.Now(), os.Getpid()
	seen := map[int]sighting{}
	var (
		reaped []Reaped
		errs   []error
	)
	for _, p := range procs {
		if p.Ppid != self || p.State != "Z" || children.has(p.Pid) {
			continue
		}
		before, ok := z.seen[p.Pid]
		if !ok || before.startTime != p.StartTime || now.Sub(before.at) < minAge {
			if !ok || before.startTime != p.StartTime {
				before = sighting{startTime: p.StartTime, at: now}
			}
			seen[p.Pid] = before
			continue
		}
		var ws unix.WaitStatus
		pid, err := unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil)
		for errors.Is(err, unix.EINTR) {
			pid, err = unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil)
		}
		switch {
		case errors.Is(err, unix.ECHILD):
			// Collected by someone else meanwhile.
		case err != nil:
			errs = append(errs, fmt.Errorf("reap zombie %d: %w", p.Pid, err))
		case pid == p.Pid:
			reaped = append(reaped, Reaped{Pid: pid, Status: ws})
		}
	}
	z.seen = seen
	return reaped, errors.Join(errs...)
}
