package domain

import (
	"fmt"
	"time"
)

// The result words of a termination, the original's
// (ProcessTerminationService#terminate: :terminated, :already_dead,
// :permission_denied, :error). RunnerService.InterruptTurn answers with
// one, and the timeline's last termination line ends with it.
const (
	// TerminationTerminated: the process was alive and the ladder ended it.
	TerminationTerminated = "terminated"
	// TerminationAlreadyDead: it had ended before the ladder reached it.
	TerminationAlreadyDead = "already_dead"
	// TerminationPermissionDenied: it could not be signalled (EPERM) and
	// outlived the ladder.
	TerminationPermissionDenied = "permission_denied"
	// TerminationError: it outlived SIGKILL, or the ladder could not be
	// run to its end.
	TerminationError = "error"
)

// Termination is what the termination ladder did to a turn's agent, as the
// process package reported it.
type Termination struct {
	Pid int
	// AlreadyEnded: the agent had ended before the ladder began.
	AlreadyEnded bool
	// GroupRefused says why SIGTERM could not reach the agent's process
	// group while the agent lived ("" when it could); LeaderSignalled: it
	// went to the agent alone instead.
	GroupRefused    string
	LeaderSignalled bool
	// Killed: the agent outlived TermGrace after SIGTERM: escalated to
	// SIGKILL.
	Killed    bool
	TermGrace time.Duration
	// PermissionDenied: a signal was refused for want of permission.
	PermissionDenied bool
	// Failed says why the ladder could not end the agent ("" when it did).
	Failed string
}

// Result is the termination's result word.
func (t Termination) Result() string {
	switch {
	case t.Failed != "" && t.PermissionDenied:
		return TerminationPermissionDenied
	case t.Failed != "":
		return TerminationError
	case t.AlreadyEnded:
		return TerminationAlreadyDead
	}
	return TerminationTerminated
}

// processLine starts every line about an agent's process.
const processLine = "[Process] "

// TerminationLines are the timeline lines of one termination of turn's
// agent, one per step the ladder took — SIGTERM to the group, a group that
// could not be signalled, the escalation to SIGKILL — the last ending with
// the result word.
func TerminationLines(turn string, t Termination) []string {
	var lines []string
	switch {
	case t.AlreadyEnded:
		lines = append(lines, fmt.Sprintf(processLine+"The agent of turn %s (pid %d) had already ended when Zimmer came to stop it.", turn, t.Pid))
	case t.GroupRefused != "" && t.LeaderSignalled:
		lines = append(lines, fmt.Sprintf(processLine+"The process group of turn %s's agent (pid %d) could not be signalled (%s): "+
			"SIGTERM sent to the agent alone.", turn, t.Pid, t.GroupRefused))
	case t.GroupRefused != "":
		lines = append(lines, fmt.Sprintf(processLine+"Neither the process group of turn %s's agent (pid %d) nor the agent itself "+
			"could be signalled (%s).", turn, t.Pid, t.GroupRefused))
	default:
		lines = append(lines, fmt.Sprintf(processLine+"SIGTERM sent to the process group of turn %s's agent (pid %d).", turn, t.Pid))
	}
	if t.Killed {
		lines = append(lines, fmt.Sprintf(processLine+"The agent of turn %s (pid %d) outlived SIGTERM's %s grace: escalated to SIGKILL, "+
			"its group first.", turn, t.Pid, t.TermGrace))
	}
	if t.Failed != "" {
		lines = append(lines, fmt.Sprintf(processLine+"The agent of turn %s (pid %d) could not be stopped: %s.", turn, t.Pid, t.Failed))
	}
	lines[len(lines)-1] += " Result: " + t.Result() + "."
	return lines
}

// ZombieReapedLine is the timeline line of a zombie the runner reaped that
// was left by turn's agent (pid in its group): nothing was waiting for it.
func ZombieReapedLine(turn string, pid int, status string) string {
	return fmt.Sprintf(processLine+"Reaped zombie process %d, left in the process group of turn %s's agent (%s).", pid, turn, status)
}
