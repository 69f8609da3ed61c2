package devstack

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// DefaultGrace is how long Stop waits after SIGTERM before it sends SIGKILL.
const DefaultGrace = 5 * time.Second

// Process is a child started in its own process group, so that stopping it
// also stops whatever it spawned, and so that a Ctrl-C in the terminal reaches
// only the supervisor, which then shuts children down in order.
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// StartProcess starts cmd in a new process group. On Linux the child also gets
// SIGKILL if the supervisor dies (Pdeathsig), a safety net against orphans.
func StartProcess(name string, cmd *exec.Cmd) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setGroupAttrs(cmd.SysProcAttr)
	if cmd.WaitDelay == 0 {
		// A grandchild that inherited our output pipe must not keep Wait (and
		// so Done) blocked after the process itself has exited.
		cmd.WaitDelay = 2 * time.Second
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error; valid once Done is closed.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// CPU is the processor time the process and the descendants it waited
// for used (user and system); valid once Done is closed.
func (p *Process) CPU() time.Duration {
	<-p.done
	if p.cmd.ProcessState == nil {
		return 0
	}
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

// Exited reports whether the process has already exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process group, waits up to grace for the leader to
// exit, then SIGKILLs the group (which also reaps stragglers the leader left
// behind). It returns nil when the process was stopped by us.
func (p *Process) Stop(grace time.Duration) error {
	pgid := p.Pid()
	if !p.Exited() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
	}
	// ESRCH means the group is already empty, which is what we want.
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s: %w", p.Name, err)
	}
	<-p.done
	return nil
}
