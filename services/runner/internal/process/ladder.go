package process

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Ladder configures termination; zero fields take the spec's defaults.
type Ladder struct {
	// TermGrace: how long the leader has to end after SIGTERM (3s).
	TermGrace time.Duration
	// KillGrace: how long after SIGKILL before giving up on it (1s).
	KillGrace time.Duration
	// SweepGrace: how long the rest of the group has to drain once the
	// leader is dead, before the SIGKILL sweep (1s).
	SweepGrace time.Duration
	// Poll is the interval of the liveness probes between signals; an exit
	// noticed by the waiter ends a wait at once regardless (default 50ms).
	Poll time.Duration
	// KillFunc sends signals (default unix.Kill).
	KillFunc KillFunc
}

// DefaultLadder is the spec's: 3s after SIGTERM, 1s after SIGKILL, 1s before
// the sweep.
func DefaultLadder() Ladder {
	return Ladder{TermGrace: 3 * time.Second, KillGrace: time.Second, SweepGrace: time.Second,
		Poll: 50 * time.Millisecond, KillFunc: unix.Kill}
}

func (l Ladder) withDefaults() Ladder {
	d := DefaultLadder()
	if l.TermGrace <= 0 {
		l.TermGrace = d.TermGrace
	}
	if l.KillGrace <= 0 {
		l.KillGrace = d.KillGrace
	}
	if l.SweepGrace <= 0 {
		l.SweepGrace = d.SweepGrace
	}
	if l.Poll <= 0 {
		l.Poll = d.Poll
	}
	if l.KillFunc == nil {
		l.KillFunc = d.KillFunc
	}
	return l
}

// Rung is how far the ladder had to climb.
type Rung int

const (
	// RungAlreadyEnded: the leader had ended before Terminate was called.
	RungAlreadyEnded Rung = iota
	// RungTerm: the leader ended within the SIGTERM grace.
	RungTerm
	// RungKill: the leader needed SIGKILL.
	RungKill
)

func (r Rung) String() string {
	switch r {
	case RungAlreadyEnded:
		return "already ended"
	case RungTerm:
		return "SIGTERM"
	case RungKill:
		return "SIGKILL"
	default:
		return fmt.Sprintf("Rung(%d)", int(r))
	}
}

// Termination reports what Terminate did.
type Termination struct {
	Rung Rung
	// GroupRefused is why SIGTERM could not reach the group while the
	// leader lived (nil when it could, or the leader had ended).
	GroupRefused error
	// LeaderSignalled: the group could not be signalled, so SIGTERM went to
	// the leader alone; LeaderRefused is why that failed too.
	LeaderSignalled bool
	LeaderRefused   error
	// Swept: group members outlived the leader and its grace and were
	// SIGKILLed by the sweep.
	Swept    bool
	Duration time.Duration
	// TermGrace is the SIGTERM grace the leader was given.
	TermGrace time.Duration
}

// Terminate walks the termination ladder (see the package doc) and returns
// once the leader is dead and the group swept. Concurrent and repeated calls
// share the one walk and its result. ctx bounds only the caller's wait; the
// walk itself is bounded by the graces and always completes. The error is
// ErrSurvived if the leader outlived SIGKILL, or ctx's.
func (p *Process) Terminate(ctx context.Context) (Termination, error) {
	p.termOnce.Do(func() {
		go func() {
			p.term, p.termErr = p.climb()
			close(p.termDone)
		}()
	})
	select {
	case <-p.termDone:
		return p.term, p.termErr
	case <-ctx.Done():
		return Termination{}, fmt.Errorf("terminate pid %d: %w", p.leader.pid, ctx.Err())
	}
}

func (p *Process) climb() (Termination, error) {
	l, cfg := p.leader, p.opts.Ladder
	start := time.Now()
	t := Termination{Rung: RungTerm, TermGrace: cfg.TermGrace}
	l.markTerminating()
	if !l.alive() {
		t.Rung = RungAlreadyEnded
	}

	// 1–2. SIGTERM to the group; to the leader alone if the group refused.
	if err := l.signalGroup(syscall.SIGTERM); err != nil && l.alive() {
		t.GroupRefused = err
		t.LeaderRefused = l.signal(syscall.SIGTERM)
		t.LeaderSignalled = t.LeaderRefused == nil
	}
	if !l.waitDead(cfg.TermGrace, cfg.Poll) {
		// 3. SIGKILL, group first, then the leader if still alive.
		t.Rung = RungKill
		_ = l.signalGroup(syscall.SIGKILL) // a refused group does not stop the leader's kill
		if l.alive() {
			if err := l.signal(syscall.SIGKILL); err != nil && t.LeaderRefused == nil {
				t.LeaderRefused = err
			}
		}
		if !l.waitDead(cfg.KillGrace, cfg.Poll) {
			t.Duration = time.Since(start)
			return t, fmt.Errorf("terminate pid %d: %w", l.pid, ErrSurvived)
		}
	}

	// 4. The sweep: the leader is dead; give the group a grace to drain,
	// then SIGKILL what is left. Its failure never changes the result.
	t.Swept = p.sweep(cfg)
	p.dropRecord() // the group is empty, or SIGKILLed: nothing left to record
	t.Duration = time.Since(start)
	return t, nil
}

func (p *Process) sweep(cfg Ladder) bool {
	l := p.leader
	deadline := time.Now().Add(cfg.SweepGrace)
	for {
		if l.groupEmpty() {
			return false
		}
		if !time.Now().Before(deadline) {
			return l.signalGroup(syscall.SIGKILL) == nil
		}
		time.Sleep(min(cfg.Poll, time.Until(deadline)))
	}
}
