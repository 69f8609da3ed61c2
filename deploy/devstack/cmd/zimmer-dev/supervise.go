package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zimmerhq/zimmer/deploy/devstack"
)

// crashLogLines is how much of a crashed component's log is shown with the restart line.
const crashLogLines = 12

// deadLetterInterval paces the dead-letter count while make run is up.
const deadLetterInterval = 30 * time.Second

// superviseComponent starts a component under devstack.DefaultRestartPolicy
// and prints a line (with the tail of its log) each time it has to be restarted.
func (e *env) superviseComponent(c component, logDir string, vars map[string]string) (*devstack.Supervisor, error) {
	starts := 0 // the first call is ours, later ones the supervisor's goroutine
	start := func() (*devstack.Process, error) {
		starts++
		return e.startComponent(c, logDir, vars, starts > 1)
	}
	return devstack.Supervise(c.name, start, devstack.DefaultRestartPolicy, func(cr devstack.Crash) {
		line := crashLine(cr)
		if tail := devstack.TailFile(logFile(logDir, c.name), crashLogLines); tail != "" {
			line += "; last log lines:" + indentLines(compactLines(tail))
		}
		e.say("%s", line)
	})
}

// compactLines renders each JSON log line as the terminal copy does.
func compactLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = compactLogLine([]byte(l))
	}
	return strings.Join(lines, "\n")
}

// crashLine says what happened and what the supervisor does about it, e.g.
// "lineage exited (exit status 2); restarting in 1s (restart 2)".
func crashLine(c devstack.Crash) string {
	what := fmt.Sprintf("%s exited (%s)", c.Name, c.ExitText())
	if c.Pid == 0 {
		what = fmt.Sprintf("%s could not be started (%s)", c.Name, c.ExitText())
	}
	if c.GiveUp {
		p := devstack.DefaultRestartPolicy
		return fmt.Sprintf("%s; not restarting: it keeps crashing (more than %d restarts within %s)", what, p.MaxRestarts, p.Window)
	}
	return fmt.Sprintf("%s; restarting in %s (restart %d)", what, c.Delay, c.Restart)
}

// stopSupervised stops the gateway, then the services, each by its own
// process group; no further restart happens once its stop has begun.
func (e *env) stopSupervised(gateway *devstack.Supervisor, services []*devstack.Supervisor) {
	if gateway != nil {
		e.say("stopping %s", pidList([]*devstack.Supervisor{gateway}))
		gateway.Stop(devstack.DefaultGrace)
	}
	if len(services) == 0 {
		return
	}
	// Concurrently: none needs another to shut down, and each may take the grace period.
	e.say("stopping %s", pidList(services))
	var wg sync.WaitGroup
	for _, s := range services {
		wg.Go(func() { s.Stop(devstack.DefaultGrace) })
	}
	wg.Wait()
}

func pidList(sups []*devstack.Supervisor) string {
	parts := make([]string, len(sups))
	for i, s := range sups {
		if pid := s.Pid(); pid != 0 {
			parts[i] = fmt.Sprintf("%s (pid %d)", s.Name(), pid)
		} else {
			parts[i] = s.Name() + " (not running)"
		}
	}
	return strings.Join(parts, ", ")
}

// watchDeadLetters prints each service's dead-letter count now and every
// interval, when it changed and is not zero: those outbox rows will never be
// delivered without someone looking at them.
func (e *env) watchDeadLetters(ctx context.Context, dbURLs map[string]string, interval time.Duration) {
	w := newDeadLetterWatch()
	for {
		for _, s := range services {
			url, ok := dbURLs[s.name]
			if !ok {
				continue
			}
			n, err := devstack.DeadLetters(ctx, url)
			if ctx.Err() != nil {
				return
			}
			if line := w.observe(s.name, url, n, err); line != "" {
				e.say("%s", line)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// deadLetterWatch remembers the last count (and error) per service so that
// only a change is printed.
type deadLetterWatch struct {
	last map[string]int64
	errs map[string]string
}

func newDeadLetterWatch() *deadLetterWatch {
	return &deadLetterWatch{last: map[string]int64{}, errs: map[string]string{}}
}

// observe returns the line to print for a count, or "" when there is nothing new.
func (w *deadLetterWatch) observe(service, dbURL string, n int64, err error) string {
	if err != nil {
		if w.errs[service] == err.Error() {
			return ""
		}
		w.errs[service] = err.Error()
		return fmt.Sprintf("%s: cannot count dead letters: %v", service, err)
	}
	delete(w.errs, service)
	if w.last[service] == n {
		return ""
	}
	w.last[service] = n
	if n == 0 {
		return ""
	}
	noun := "outbox messages"
	if n == 1 {
		noun = "outbox message"
	}
	return fmt.Sprintf("%s: %d %s could not be delivered (dead letters); see outbox_messages.last_error:\n"+
		"    psql '%s' -c 'SELECT id, subscriber, topic, attempts, last_error FROM outbox_messages WHERE dead_at IS NOT NULL'",
		service, n, noun, dbURL)
}
