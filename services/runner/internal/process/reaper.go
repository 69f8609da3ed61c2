package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
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
//
// groups holds the process groups those leaders made (pgid = the leader's
// pid) while any process of theirs is left, zombies included: a pgid is not
// handed out again while a process holds it, so a zombie in one of them is
// an agent's descendant, which no waiter but the reaper will ever collect.
// A pass forgets a group once the leader is reaped and no process of the
// group is left. Each group keeps its leader's labels (Options.Labels), so
// a zombie reaped in it is told on its turn's session.
type registry struct {
	forkMu sync.RWMutex
	mu     sync.Mutex
	pids   map[int]struct{}
	groups map[int]map[string]string
}

var children = &registry{pids: map[int]struct{}{}, groups: map[int]map[string]string{}}

func (r *registry) fork(labels map[string]string, start func() (int, error)) (int, error) {
	r.forkMu.RLock()
	defer r.forkMu.RUnlock()
	pid, err := start()
	if err == nil {
		r.mu.Lock()
		r.pids[pid] = struct{}{}
		r.groups[pid] = labels
		r.mu.Unlock()
	}
	return pid, err
}

// group reports whether pgid is a group this package started, and its
// leader's labels.
func (r *registry) group(pgid int) (labels map[string]string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	labels, ok = r.groups[pgid]
	return labels, ok
}

// forgetGroups drops the groups whose leader is reaped and which no
// process holds any more. Called with forkMu held, so no group is made
// meanwhile. It asks the kernel (signal 0 to the group: ESRCH once no
// process, zombies included, holds the id) rather than a /proc listing:
// a listing taken while a process is being released can miss a live
// neighbour (seen: the leader's reaping hid its orphan), and a group
// forgotten while its orphan lives leaves that orphan's zombie unreaped.
func (r *registry) forgetGroups() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for g := range r.groups {
		if _, leader := r.pids[g]; !leader && errors.Is(unix.Kill(-g, 0), unix.ESRCH) {
			delete(r.groups, g)
		}
	}
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
// (SetChildSubreaper), which nobody else would ever wait for. One kind of
// them is reaped at the first sighting: a zombie in a process group this
// package started (an agent's, which it left when its leader ended) and in
// the runner's own session. os/exec's commands are never there: they share
// the runner's group, or (git) start a session of their own. A pass only
// waits for pids it picked (wait4 on each, WNOHANG), never for any child.
//
// Run drives passes as children end (SIGCHLD), so a zombie is collected at
// once, or MinAge later when it needs a second sighting.
type ZombieReaper struct {
	// MinAge is how long a zombie must have been seen before it is reaped
	// (DefaultZombieAge when 0).
	MinAge time.Duration

	mu   sync.Mutex
	seen map[int]sighting
	// list reads every process (listProcs; tests count its calls).
	list func() ([]procInfo, error)
}

type sighting struct {
	startTime uint64
	at        time.Time
}

// Reaped is a zombie a pass collected.
type Reaped struct {
	Pid    int
	Status unix.WaitStatus
	// Labels are those of the agent whose process group it was in
	// (Options.Labels: its turn and session); nil for any other zombie.
	Labels map[string]string
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
	children.forgetGroups()
	z.mu.Lock()
	defer z.mu.Unlock()
	// Most passes find no zombie: a SIGCHLD is mostly a git command or
	// an agent whose waiter collects it at once. Asking the kernel costs
	// one syscall; the /proc listing below costs three per process on the
	// machine, and a burst of sessions sends dozens of SIGCHLDs a second
	// (issue 21: the listing was over half the runner's CPU in a ramp).
	if zombie, err := zombieChild(); err == nil && !zombie {
		z.seen = map[int]sighting{}
		return nil, nil
	}
	list := z.list
	if list == nil {
		list = listProcs
	}
	procs, err := list()
	if err != nil {
		return nil, err
	}
	now, self, selfGroup := time.Now(), os.Getpid(), unix.Getpgrp()
	selfSession, err := unix.Getsid(0)
	if err != nil {
		return nil, fmt.Errorf("read the runner's session id: %w", err)
	}
	seen := map[int]sighting{}
	var (
		reaped []Reaped
		errs   []error
	)
	for _, p := range procs {
		if p.Ppid != self || p.State != "Z" || children.has(p.Pid) {
			continue
		}
		labels, started := children.group(p.Pgrp)
		agents := p.Pgrp != selfGroup && p.Session == selfSession && started
		before, ok := z.seen[p.Pid]
		if !agents && (!ok || before.startTime != p.StartTime || now.Sub(before.at) < minAge) {
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
			r := Reaped{Pid: pid, Status: ws}
			if agents {
				r.Labels = labels
			}
			reaped = append(reaped, r)
		}
	}
	z.seen = seen
	return reaped, errors.Join(errs...)
}

// zombieChild reports whether a child of this process is a zombie, without
// collecting it (waitid WNOWAIT on any child): a zombie of a waiter's stays
// the waiter's to collect. Linux fills si_signo with SIGCHLD only when it
// found a child; with none waitable it zeroes it.
func zombieChild() (bool, error) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			return false, nil // no child at all
		case err != nil:
			return false, fmt.Errorf("ask for a zombie child: %w", err)
		}
		return info.Signo == int32(unix.SIGCHLD), nil
	}
}

// Pending reports whether the last pass left zombies to look at again once
// they are MinAge old.
func (z *ZombieReaper) Pending() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	return len(z.seen) > 0
}

// Run runs a pass at once, chldSettle after every SIGCHLD (a child of the runner ended:
// one of its own, or an orphan reparented to it), and MinAge after a pass
// that left zombies to see again, until ctx ends. report hears of each
// pass that reaped something or failed. A burst of SIGCHLDs makes one pass.
func (z *ZombieReaper) Run(ctx context.Context, report func([]Reaped, error)) {
	minAge := z.MinAge
	if minAge <= 0 {
		minAge = DefaultZombieAge
	}
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)
	again := time.NewTimer(0)
	defer again.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-chld:
			// Most SIGCHLDs are a git command or an agent whose waiter
			// collects it within moments; a pass after that finds no
			// zombie and costs one syscall, one before it lists /proc.
			select {
			case <-ctx.Done():
				return
			case <-time.After(chldSettle):
			}
		case <-again.C:
		}
		reaped, err := z.Pass()
		if len(reaped) > 0 || err != nil {
			report(reaped, err)
		}
		if z.Pending() {
			// A little past MinAge, so the next pass finds them old enough.
			again.Reset(minAge + minAge/10)
		}
	}
}

// chldSettle is how long Run lets the waiters collect their children after a
// SIGCHLD before it looks (issue 21: in a burst's ramp, passes that raced
// os/exec's Wait still listed /proc for a tenth of the runner's CPU).
const chldSettle = 50 * time.Millisecond

// RunZombieReaper runs the process's own ZombieReaper (see Run): the
// runner's, which keeps its zombies from lingering.
func RunZombieReaper(ctx context.Context, report func([]Reaped, error)) {
	defaultReaper.Run(ctx, report)
}
