package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Command is what to run.
type Command struct {
	// Path is the program; without a slash it is looked up in the runner's
	// PATH, as os/exec does.
	Path string
	// Args is the full argv, Args[0] included; empty means {Path}.
	Args []string
	Dir  string
	// Env is the child's whole environment; nil means the runner's own.
	// Of duplicate keys the last wins, as with os/exec: callers append
	// their settings to a base.
	Env []string
	// Stdin is written to the child's stdin, which is then closed; nil
	// gives it /dev/null.
	Stdin []byte
	// KeepStdinOpen gives the child a stdin pipe that stays open for
	// Process.WriteInput until the leader exits (Stdin must be nil).
	KeepStdinOpen bool
}

// Options tune one run; the zero value is usable.
type Options struct {
	// OnLine receives every output line, in arrival order, from a single
	// goroutine; nil discards output. It may be slow: see the package doc.
	OnLine func(Line)
	// MaxLineBytes cuts longer lines (default 1 MiB).
	MaxLineBytes int
	// MaxBufferedBytes bounds the text waiting for OnLine (default 16 MiB).
	MaxBufferedBytes int
	// DrainTimeout is how long output may still arrive once the leader was
	// reaped, from grandchildren holding the pipes (default 1s).
	DrainTimeout time.Duration
	// StderrTailLines is how many last stderr lines Exit keeps (default 20).
	StderrTailLines int
	// Ladder configures Terminate.
	Ladder Ladder
	// RecordDir, when set, keeps a Record of the process in this folder
	// until its leader is reaped and its group empty or swept, so the
	// runner's next incarnation can kill it if this one dies first
	// (KillRecorded). A record that cannot be written fails the start.
	RecordDir string
	// Labels are copied into the Record (a turn id, a session id).
	Labels map[string]string
}

const (
	defaultMaxLineBytes     = 1 << 20
	defaultMaxBufferedBytes = 16 << 20
	defaultDrainTimeout     = time.Second
	defaultStderrTailLines  = 20
)

func (o Options) withDefaults() Options {
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = defaultMaxLineBytes
	}
	if o.MaxBufferedBytes <= 0 {
		o.MaxBufferedBytes = defaultMaxBufferedBytes
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = defaultDrainTimeout
	}
	if o.StderrTailLines == 0 {
		o.StderrTailLines = defaultStderrTailLines
	}
	if o.OnLine == nil {
		o.OnLine = func(Line) {}
	}
	o.Ladder = o.Ladder.withDefaults()
	return o
}

// Exit is how the leader ended.
type Exit struct {
	Pid int
	// Code is the exit status, -1 when it died by a signal or is unknown.
	Code int
	// Signal is the signal it died by, 0 when it exited.
	Signal     syscall.Signal
	CoreDumped bool
	// SignalSentByUs: Signal is one this package delivered to it (the
	// ladder). False for an OOM kill, a crash, anyone else's kill.
	SignalSentByUs bool
	// StatusKnown is false when something other than this package reaped
	// the child, so its status is lost.
	StatusKnown bool
	// TerminateRequested: Terminate was called before the leader ended.
	TerminateRequested bool
	// DroppedLines counts lines never delivered to OnLine (slow consumer).
	DroppedLines int
	// OutputCut: the pipes were still open DrainTimeout after the leader
	// was reaped and reading stopped there.
	OutputCut bool
	// StderrTail holds the last stderr lines, oldest first.
	StderrTail []string
}

// Signaled reports whether the leader died by a signal.
func (e Exit) Signaled() bool { return e.Signal != 0 }

func (e Exit) String() string {
	switch {
	case !e.StatusKnown:
		return "ended with an unknown status (reaped elsewhere)"
	case e.Signaled() && e.SignalSentByUs:
		return fmt.Sprintf("killed by %s, sent by Zimmer", unix.SignalName(e.Signal))
	case e.Signaled():
		return fmt.Sprintf("killed by %s, not sent by Zimmer", unix.SignalName(e.Signal))
	default:
		return fmt.Sprintf("exit status %d", e.Code)
	}
}

// Process is one started command.
type Process struct {
	leader *leader
	opts   Options

	done chan struct{} // closed once the leader is gone and output drained
	exit Exit

	recordMu   sync.Mutex
	recordPath string // "" without a record, and once it is removed

	inputMu sync.Mutex
	input   *os.File // the open stdin (KeepStdinOpen); nil once the leader exited

	termOnce sync.Once
	termDone chan struct{}
	term     Termination
	termErr  error
}

// Start runs cmd in a new process group whose id is its pid.
func Start(cmd Command, opts Options) (*Process, error) {
	opts = opts.withDefaults()
	path := cmd.Path
	if !strings.Contains(path, "/") {
		found, err := exec.LookPath(path)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
		}
		path = found
	}
	argv := cmd.Args
	if len(argv) == 0 {
		argv = []string{cmd.Path}
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = dedupEnv(env)

	var parentEnds, childEnds []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			_ = f.Close()
		}
	}
	if cmd.KeepStdinOpen && cmd.Stdin != nil {
		return nil, fmt.Errorf("start %s: KeepStdinOpen takes no Stdin: write it with WriteInput", cmd.Path)
	}
	stdinChild, stdinParent, err := stdinFiles(cmd.Stdin, cmd.KeepStdinOpen)
	if err != nil {
		return nil, fmt.Errorf("start %s: stdin: %w", cmd.Path, err)
	}
	childEnds = append(childEnds, stdinChild)
	if stdinParent != nil {
		parentEnds = append(parentEnds, stdinParent)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(append(parentEnds, childEnds...))
		return nil, fmt.Errorf("start %s: stdout pipe: %w", cmd.Path, err)
	}
	parentEnds, childEnds = append(parentEnds, outR), append(childEnds, outW)
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(append(parentEnds, childEnds...))
		return nil, fmt.Errorf("start %s: stderr pipe: %w", cmd.Path, err)
	}
	parentEnds, childEnds = append(parentEnds, errR), append(childEnds, errW)

	pid, err := children.fork(opts.Labels, func() (int, error) {
		return syscall.ForkExec(path, argv, &syscall.ProcAttr{
			Dir:   cmd.Dir,
			Env:   env,
			Files: []uintptr{stdinChild.Fd(), outW.Fd(), errW.Fd()},
			Sys:   &syscall.SysProcAttr{Setpgid: true},
		})
	})
	closeAll(childEnds)
	if err != nil {
		closeAll(parentEnds)
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	recordPath := ""
	if opts.RecordDir != "" {
		if recordPath, err = recordStart(opts, pid); err != nil {
			killUnrecorded(pid)
			closeAll(parentEnds)
			return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
		}
	}

	p := &Process{
		leader:     newLeader(pid, opts.Ladder.KillFunc),
		opts:       opts,
		done:       make(chan struct{}),
		termDone:   make(chan struct{}),
		recordPath: recordPath,
	}
	go p.leader.waitExit(opts.Ladder.Poll)
	switch {
	case cmd.KeepStdinOpen:
		p.input = stdinParent
		go p.closeInputAtExit()
	case stdinParent != nil:
		go writeStdin(stdinParent, cmd.Stdin, p.leader.exited)
	}
	go p.collect(outR, errR)
	return p, nil
}

// recordStart writes the Record of the child pid. It runs before anything
// may reap the child, so /proc/<pid> is still the child's own.
func recordStart(opts Options, pid int) (string, error) {
	info, err := readProcInfo(pid)
	if err != nil {
		return "", fmt.Errorf("read the start time of pid %d: %w", pid, err)
	}
	return writeRecord(opts.RecordDir, Record{
		Pid: pid, Pgid: pid, StartTime: info.StartTime, Labels: opts.Labels, Started: time.Now(),
	})
}

// killUnrecorded kills and reaps a child whose record could not be written:
// unrecorded, it could outlive a runner killed -9 unseen.
func killUnrecorded(pid int) {
	_ = unix.Kill(-pid, syscall.SIGKILL)
	_ = unix.Kill(pid, syscall.SIGKILL)
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(pid, &ws, 0, nil); !errors.Is(err, unix.EINTR) {
			break
		}
	}
	children.remove(pid)
}

// dropRecord deletes the process's record, once the leader is reaped and
// its group has no live member left (empty, or SIGKILLed by the sweep).
func (p *Process) dropRecord() {
	p.recordMu.Lock()
	defer p.recordMu.Unlock()
	if p.recordPath == "" {
		return
	}
	if err := removeRecord(p.recordPath); err != nil {
		// Left behind, it is harmless: the next KillRecorded finds its
		// group gone (or the pid recycled) and only deletes it.
		return
	}
	p.recordPath = ""
}

func stdinFiles(data []byte, keepOpen bool) (child, parent *os.File, err error) {
	if data == nil && !keepOpen {
		f, err := os.Open(os.DevNull)
		return f, nil, err
	}
	return os.Pipe()
}

// writeStdin feeds the child and closes its stdin. A child that never reads
// would leave the write blocked; closing the pipe once the leader is gone
// releases it (os.File pipes are pollable, so Close interrupts the Write).
func writeStdin(w *os.File, data []byte, exited <-chan struct{}) {
	written := make(chan struct{})
	go func() {
		defer close(written)
		_, _ = io.Copy(w, bytes.NewReader(data)) // EPIPE: the child stopped reading
		_ = w.Close()
	}()
	select {
	case <-written:
	case <-exited:
		_ = w.Close()
		<-written
	}
}

// ErrNoInput: the process's stdin is not open for WriteInput (it was not
// started with KeepStdinOpen, or its leader exited).
var ErrNoInput = errors.New("the process takes no input: its stdin is not open")

// inputWriteTimeout bounds one WriteInput: a child that stops reading
// fills the pipe, and the write must not block for ever.
const inputWriteTimeout = 5 * time.Second

// WriteInput writes b to the process's open stdin (KeepStdinOpen), whole
// or not at all as far as one call can tell: writes are serialised, so
// two callers' lines never interleave.
func (p *Process) WriteInput(b []byte) error {
	p.inputMu.Lock()
	defer p.inputMu.Unlock()
	if p.input == nil {
		return ErrNoInput
	}
	if err := p.input.SetWriteDeadline(time.Now().Add(inputWriteTimeout)); err != nil {
		return fmt.Errorf("write to pid %d's stdin: %w", p.leader.pid, err)
	}
	if _, err := p.input.Write(b); err != nil {
		return fmt.Errorf("write to pid %d's stdin: %w", p.leader.pid, err)
	}
	return nil
}

// closeInputAtExit closes the open stdin once the leader is gone: nothing
// reads it any more.
func (p *Process) closeInputAtExit() {
	<-p.leader.exited
	p.inputMu.Lock()
	defer p.inputMu.Unlock()
	_ = p.input.Close()
	p.input = nil
}

// collect reads both pipes until EOF, or until DrainTimeout after the leader
// is gone, delivers every line, then publishes the Exit.
func (p *Process) collect(outR, errR *os.File) {
	stderrTail := &tail{n: p.opts.StderrTailLines}
	queue := newLineQueue(p.opts.MaxBufferedBytes, 2, p.opts.OnLine)
	var readers sync.WaitGroup
	read := func(f *os.File, s Stream) {
		defer readers.Done()
		defer queue.closeProducer()
		readLines(f, p.opts.MaxLineBytes, func(text string, truncated bool) {
			if s == Stderr {
				stderrTail.add(text)
			}
			queue.push(Line{Stream: s, Text: text, Truncated: truncated})
		})
	}
	readers.Add(2)
	go read(outR, Stdout)
	go read(errR, Stderr)
	delivered := make(chan int, 1)
	go func() { delivered <- queue.deliver() }()

	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()
	cut := false
	select {
	case <-readersDone:
		<-p.leader.exited
	case <-p.leader.exited:
		select {
		case <-readersDone:
		case <-time.After(p.opts.DrainTimeout):
			cut = true
			// Unblocks the readers: a survivor still holds the pipes.
			_ = outR.SetReadDeadline(time.Now())
			_ = errR.SetReadDeadline(time.Now())
			<-readersDone
		}
	}
	_ = outR.Close()
	_ = errR.Close()

	if p.leader.groupEmpty() {
		p.dropRecord()
	}
	exit := p.leader.exit()
	exit.DroppedLines = <-delivered
	exit.OutputCut = cut
	exit.StderrTail = stderrTail.snapshot()
	p.exit = exit
	close(p.done)
}

// Pid is the leader's pid, which is also the process group id.
func (p *Process) Pid() int { return p.leader.pid }

// Done is closed once the process ended and its output was delivered.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait returns how the process ended, once it has and every line was handed
// to OnLine; ctx only bounds the waiting, it does not stop the process.
func (p *Process) Wait(ctx context.Context) (Exit, error) {
	select {
	case <-p.done:
		return p.exit, nil
	case <-ctx.Done():
		return Exit{}, fmt.Errorf("wait for pid %d: %w", p.leader.pid, ctx.Err())
	}
}

// ErrSurvived means the leader was still alive after SIGKILL and its grace
// (a process stuck in the kernel); the caller must not treat it as ended.
var ErrSurvived = errors.New("process still alive after SIGKILL")

// dedupEnv keeps the last value of each key, in the order keys first appear.
// Programs disagree on which duplicate getenv returns (Go and glibc take the
// first), so none is passed on.
func dedupEnv(env []string) []string {
	last := make(map[string]int, len(env))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	out := make([]string, 0, len(last))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if last[k] == i {
			out = append(out, kv)
		}
	}
	return out
}
