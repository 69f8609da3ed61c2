// Package process (Linux) runs one agent command in its own process group, streams
// its output lines, reports how it ended, and terminates it with the spec's
// ladder (session-lifecycle.md, "How a process actually gets terminated").
//
// # One reaper
//
// The exit status of a child can be collected exactly once, and the spec
// answers liveness by collecting it: waitpid(pid, WNOHANG) returns the status
// of a child that has exited (and reaps it), 0 for one still running, and
// ECHILD for a pid that is not, or no longer, our child — only then is
// kill(pid, 0) asked, because signal 0 succeeds on an unreaped zombie. So
// os/exec, whose Wait insists on reaping, is not used: the child is started
// with syscall.ForkExec and this package is the only code that waits on it.
//
// Every reap and every signal to the leader's pid happens under one mutex
// (leader.mu) that also holds the "reaped" flag. A signal can therefore never
// slip in between the reap and the flag, and a reaped pid — which the kernel
// may hand to an unrelated process — is never signalled or probed again.
//
// A waiter goroutine blocks in waitid(P_PID, pid, WEXITED|WNOWAIT): it learns
// that the child exited without collecting it, then takes the mutex and reaps
// through the same WNOHANG probe the ladder uses. Whichever of the two gets
// there first records the status; the other sees the flag. The waiter makes
// an exit noticed at once (a child dying at its first SIGTERM ends the ladder
// at once, not at the next poll) without a polling loop per process; it costs
// one thread blocked in the kernel per running child, and no CPU.
//
// # Output
//
// stdout and stderr are pipes read by one goroutine each; lines longer than
// Options.MaxLineBytes are cut (Line.Truncated) and the rest of the line is
// discarded. Readers never wait for the consumer: they append to a queue
// bounded by Options.MaxBufferedBytes, and a single goroutine delivers the
// queue to Options.OnLine in arrival order (across the two pipes, the order
// they were read in). When the consumer falls that far behind, new lines are
// dropped and counted (Line.DroppedBefore, Exit.DroppedLines) rather than
// letting the pipe fill and stall the agent in write(2). The last stderr
// lines are kept on the reading side (Exit.StderrTail), so a slow consumer
// cannot lose what a failure reason quotes. Wait returns only after OnLine
// has returned for the last line, so the turn's end sees all of its output.
//
// A grandchild that inherited the pipes can keep them open after the leader
// ended; reading stops Options.DrainTimeout after the leader is reaped
// (Exit.OutputCut), so Wait never hangs on a survivor.
//
// # Termination
//
// Terminate walks the ladder once, however many callers ask: SIGTERM to the
// group (-pid), SIGTERM to the leader alone if the group could not be
// signalled, the SIGTERM grace, SIGKILL to the group and then the leader if
// it is still alive, the SIGKILL grace, and a SIGKILL sweep of the group after
// one more grace, skipped silently when the group is already empty. A group
// that cannot be signalled, or a sweep that fails, never downgrades the
// result: the leader is dead, and that is what the caller acts on. Terminate
// returns once the sweep's SIGKILL is sent: a process with SIGKILL pending
// runs no more user code, so the turn's processes can no longer act. Group
// signals after the leader was reaped address its pgid, which the kernel does
// not reuse while any member of the group is alive; once the group is empty a
// recycled pgid is possible in principle (as in the spec's design), which is
// why the sweep first asks whether the group is empty.
//
// # What outlives the runner
//
// The agent runs in its own process group, so a runner killed by SIGKILL
// leaves it running. With Options.RecordDir, Start writes a Record of it
// (pid, pgid, its start time from /proc/<pid>/stat, the caller's labels),
// atomically, before anything may reap it, and deletes it once the leader
// is reaped and its group has no live member (or was swept; a leader that
// exits on its own leaving live members keeps its record until Terminate
// sweeps them, or the next incarnation kills them). The runner's
// next incarnation calls KillRecorded before it serves its node's task
// queue: it SIGKILLs every recorded group still alive and waits for it to
// be gone. The start time makes a recycled pid a different process, never
// touched. The window between fork and the record's rename is the only
// time a runner's death leaves an agent unrecorded.
//
// # Zombies
//
// SetChildSubreaper makes the runner the reaper of its agents' orphans
// (grandchildren whose leader ended), which would otherwise go to init; a
// group sweep still reaches them. Their zombies, and any other child no one
// waits for, are collected by ZombieReaper passes, which never take a pid a
// live waiter owns: not a leader this package has not reaped (a registry,
// kept in step with forks under a lock), and, outside the agents' own
// process groups, not a zombie younger than MinAge by its own sightings
// (os/exec's Wait, in the workspace package's git calls, collects its child
// within moments). RunZombieReaper runs a pass at every SIGCHLD, so an
// agent's orphan is collected when it dies. See ZombieReaper.
//
// Exit.SignalSentByUs tells a signal the ladder sent (a pause, an archive)
// from one it did not (an OOM kill, a crash), which the turn routes
// differently: the spec resumes a signal death Zimmer did not cause.
package process
