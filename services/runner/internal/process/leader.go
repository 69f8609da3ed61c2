package process

import (
	"errors"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// KillFunc sends sig to pid (negative: the process group -pid); sig 0 only
// asks whether the target exists. unix.Kill is the real one; tests inject
// their own to count or refuse signals.
type KillFunc func(pid int, sig syscall.Signal) error

// errReaped is returned for a signal not sent because the leader is gone.
var errReaped = errors.New("leader already reaped")

// leader is the process-group leader we started. mu serialises every reap
// and every signal to pid, so nothing is sent to a pid after it was reaped.
type leader struct {
	pid  int
	kill KillFunc

	mu          sync.Mutex
	gone        bool // reaped by us, or found gone; pid never used again
	status      unix.WaitStatus
	statusKnown bool                    // false when something else reaped it (ECHILD)
	sent        map[syscall.Signal]bool // signals we delivered while it lived
	terminating bool                    // Terminate was called before it ended

	exited chan struct{} // closed once gone
}

func newLeader(pid int, kill KillFunc) *leader {
	return &leader{pid: pid, kill: kill, sent: map[syscall.Signal]bool{}, exited: make(chan struct{})}
}

// alive answers by reaping: see the package doc.
func (l *leader) alive() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.aliveLocked()
}

func (l *leader) aliveLocked() bool {
	if l.gone {
		return false
	}
	var ws unix.WaitStatus
	for {
		pid, err := unix.Wait4(l.pid, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err == nil && pid == l.pid:
			l.markGoneLocked(ws, true)
			return false
		case err == nil:
			return true // 0: genuinely still running
		case errors.Is(err, unix.ECHILD):
			// Not (or no longer) our child: now signal 0 is the right question.
			if kerr := l.kill(l.pid, 0); kerr == nil || errors.Is(kerr, unix.EPERM) {
				return true
			}
			l.markGoneLocked(0, false)
			return false
		default:
			// waitpid cannot fail otherwise for a valid pid; claiming it dead
			// would end the ladder early, so keep treating it as alive.
			return true
		}
	}
}

func (l *leader) markGoneLocked(ws unix.WaitStatus, known bool) {
	l.gone = true
	children.remove(l.pid)
	l.status = ws
	l.statusKnown = known
	close(l.exited)
}

// signal sends sig to the leader alone, never once it is gone.
func (l *leader) signal(sig syscall.Signal) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		return errReaped
	}
	if err := l.kill(l.pid, sig); err != nil {
		return err
	}
	l.sent[sig] = true
	return nil
}

// signalGroup sends sig to the process group. It holds mu so that a leader
// dying of this very signal is reaped only after the signal is recorded.
func (l *leader) signalGroup(sig syscall.Signal) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.kill(-l.pid, sig); err != nil {
		return err
	}
	if !l.gone {
		l.sent[sig] = true
	}
	return nil
}

// groupEmpty reports whether no live process of the group is left. A group
// we may not signal (EPERM) counts as empty: there is nothing we could
// sweep. Zombies do not count: signal 0 finds a group whose members all
// ended but wait for their reaper (the runner itself, as a subreaper, until
// its zombie reaper runs), and they run nothing. When /proc cannot tell,
// the group counts as alive: a sweep is the safe mistake.
func (l *leader) groupEmpty() bool {
	if l.kill(-l.pid, 0) != nil {
		return true
	}
	members, err := liveMembers(l.pid)
	return err == nil && len(members) == 0
}

func (l *leader) markTerminating() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.gone {
		l.terminating = true
	}
}

// waitExit blocks until the leader is gone: waitid with WNOWAIT learns of the
// exit without collecting it, and the reap goes through alive() like every
// other probe. When waitid cannot watch the pid (ECHILD: reaped elsewhere),
// alive() falls back to signal 0, polled every poll.
func (l *leader) waitExit(poll time.Duration) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, l.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if !l.alive() {
			return
		}
		time.Sleep(poll)
	}
}

// waitDead waits up to grace for the leader to be gone, probing at each poll
// and at the end; the exited channel makes a prompt exit end the wait at once.
func (l *leader) waitDead(grace, poll time.Duration) bool {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if !l.alive() {
			return true
		}
		select {
		case <-l.exited:
			return true
		case <-tick.C:
		case <-deadline.C:
			return !l.alive()
		}
	}
}

// exit snapshots how the leader ended; only valid once exited is closed.
func (l *leader) exit() Exit {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := Exit{Pid: l.pid, Code: -1, StatusKnown: l.statusKnown, TerminateRequested: l.terminating}
	switch {
	case !l.statusKnown:
	case l.status.Exited():
		e.Code = l.status.ExitStatus()
	case l.status.Signaled():
		e.Signal = l.status.Signal()
		e.CoreDumped = l.status.CoreDump()
		e.SignalSentByUs = l.sent[e.Signal]
	}
	return e
}
