package devstack

import (
	"fmt"
	"sync"
	"time"
)

// RestartPolicy says how a Supervisor restarts a child that exits on its own.
type RestartPolicy struct {
	// InitialBackoff is the wait before the first restart of a crash streak;
	// each further restart doubles it, up to MaxBackoff.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// StableAfter is how long a run must last to end the streak: the next
	// crash is then restart 1 again, after InitialBackoff.
	StableAfter time.Duration
	// MaxRestarts within Window: a crash that would need one more gives up.
	MaxRestarts int
	Window      time.Duration
}

// DefaultRestartPolicy is make run's: a crash is restarted after 250ms,
// 500ms, 1s, … up to 30s; a run of 30s resets that; a child that needs a 6th
// restart within one minute is crash-looping, and the stack stops.
var DefaultRestartPolicy = RestartPolicy{
	InitialBackoff: 250 * time.Millisecond,
	MaxBackoff:     30 * time.Second,
	StableAfter:    30 * time.Second,
	MaxRestarts:    5,
	Window:         time.Minute,
}

// restartState applies a RestartPolicy to a sequence of exits.
type restartState struct {
	policy   RestartPolicy
	streak   int         // restarts since the last stable run
	restarts []time.Time // restarts within the policy's window
}

// afterExit decides what follows an exit at now of a run that lasted uptime:
// restart number n (1-based within the streak) after delay, or give up.
func (s *restartState) afterExit(now time.Time, uptime time.Duration) (n int, delay time.Duration, giveUp bool) {
	if uptime >= s.policy.StableAfter {
		s.streak = 0
	}
	recent := s.restarts[:0]
	for _, at := range s.restarts {
		if now.Sub(at) < s.policy.Window {
			recent = append(recent, at)
		}
	}
	s.restarts = recent
	if len(s.restarts) >= s.policy.MaxRestarts {
		return s.streak, 0, true
	}
	delay = s.policy.InitialBackoff
	for range s.streak {
		delay *= 2
		if delay >= s.policy.MaxBackoff {
			delay = s.policy.MaxBackoff
			break
		}
	}
	s.streak++
	s.restarts = append(s.restarts, now)
	return s.streak, delay, false
}

// Crash is one exit of a supervised child that nobody asked for, and what the
// supervisor does about it.
type Crash struct {
	Name   string
	Pid    int           // 0 when the child could not even be started
	Err    error         // the exit error (nil: exit status 0), or why it could not start
	Uptime time.Duration // how long that run lasted
	// Restart is the restart about to happen, 1-based within the crash streak,
	// after Delay. When GiveUp is set there is none: the child stays down.
	Restart int
	Delay   time.Duration
	GiveUp  bool
}

// ExitText describes how the child ended, e.g. "exit status 2" or "signal: killed".
func (c Crash) ExitText() string {
	if c.Err == nil {
		return "exit status 0"
	}
	return c.Err.Error()
}

// Supervisor keeps one child running: when it exits on its own, it is
// started again after a growing back-off, until it crashes too often (see
// RestartPolicy). Each child runs in its own process group (StartProcess), and
// Stop ends exactly the child the supervisor started last, never anything else.
type Supervisor struct {
	name    string
	startFn func() (*Process, error)
	onCrash func(Crash)
	state   restartState

	stop     chan struct{}
	stopOnce sync.Once
	grace    time.Duration // set by Stop before stop is closed
	done     chan struct{}

	mu      sync.Mutex
	current *Process // nil while waiting to restart
	err     error    // why the supervisor gave up; set before done is closed
}

// Supervise starts the child with start and keeps it running under policy.
// onCrash, called from the supervisor's goroutine, reports every unexpected
// exit (print it; do not block). A failure of the first start is returned.
func Supervise(name string, start func() (*Process, error), policy RestartPolicy, onCrash func(Crash)) (*Supervisor, error) {
	p, err := start()
	if err != nil {
		return nil, err
	}
	s := &Supervisor{
		name: name, startFn: start, onCrash: onCrash, state: restartState{policy: policy},
		stop: make(chan struct{}), done: make(chan struct{}), current: p,
	}
	go s.loop(p, time.Now())
	return s, nil
}

// Name is the child's name.
func (s *Supervisor) Name() string { return s.name }

// Pid is the running child's pid (its process group id); 0 while it is down.
func (s *Supervisor) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil || s.current.Exited() {
		return 0
	}
	return s.current.Pid()
}

// Done is closed when supervision has ended: after Stop, or on giving up.
func (s *Supervisor) Done() <-chan struct{} { return s.done }

// Err says why the supervisor gave up; nil while it runs or after Stop.
func (s *Supervisor) Err() error {
	select {
	case <-s.done:
	default:
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Stop ends supervision: no further restart happens, and the current child
// (with its process group) gets SIGTERM, then SIGKILL after grace. It returns
// once the child is gone. Calling it again, or after giving up, is a no-op.
func (s *Supervisor) Stop(grace time.Duration) {
	s.stopOnce.Do(func() {
		s.grace = grace
		close(s.stop)
	})
	<-s.done
}

// loop watches p, started at started, and what replaces it.
func (s *Supervisor) loop(p *Process, started time.Time) {
	defer close(s.done)
	var startErr error // why p is nil
	for {
		crash := Crash{Name: s.name, Err: startErr}
		if p != nil {
			crash.Pid = p.Pid()
			select {
			case <-p.Done():
				crash.Err = p.Err()
			case <-s.stop:
				_ = p.Stop(s.grace)
				return
			}
		}
		if s.stopping() {
			return // it exited just as it was asked to
		}
		// Exited on its own, or could not start: a service never should.
		s.setCurrent(nil)
		now := time.Now()
		crash.Uptime = now.Sub(started)
		crash.Restart, crash.Delay, crash.GiveUp = s.state.afterExit(now, crash.Uptime)
		s.onCrash(crash)
		if crash.GiveUp {
			s.mu.Lock()
			s.err = fmt.Errorf("%s keeps crashing: it would need more than %d restarts within %s (last: %s)",
				s.name, s.state.policy.MaxRestarts, s.state.policy.Window, crash.ExitText())
			s.mu.Unlock()
			return
		}
		select {
		case <-time.After(crash.Delay):
		case <-s.stop:
			return
		}
		p, startErr = s.startFn()
		started = time.Now()
		if startErr != nil {
			p = nil
		}
		s.setCurrent(p)
	}
}

func (s *Supervisor) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

func (s *Supervisor) setCurrent(p *Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = p
}
