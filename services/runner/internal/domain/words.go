package domain

import (
	"fmt"
	"strings"
	"time"
)

// Recovery paths: which producer sent a recovery nudge. Each is named in
// the nudge's last line (RecoveryNudge), so neither the agent nor a human
// reading over its shoulder has to guess which fired.
const (
	PathInterruptedTurn = "interrupted turn"
	PathOrphanSweep     = "orphan sweep"
	PathRunnerShutdown  = "runner shutdown"
	PathSignalDeath     = "signal death"
)

// RecoveryPrompt is appended to the prompt of a turn whose process died by a
// signal Zimmer did not send, when the turn is run again: the spec's
// system_recovery(reason:) names the path after the standing text.
const RecoveryPrompt = "[Zimmer system recovery] Your previous process died by a signal Zimmer did not send (%s); " +
	"continue where you left off."

// recoveryMark starts every recovery text: a prompt that carries it is not
// given RecoveryPrompt again.
const recoveryMark = "[Zimmer system recovery]"

// AfterSignalDeath is the prompt of the turn that resumes one whose process
// died by signal: the lost turn's, with RecoveryPrompt appended once.
func AfterSignalDeath(prompt, signal string) string {
	if strings.Contains(prompt, recoveryMark) {
		return prompt
	}
	return prompt + "\n\n" + fmt.Sprintf(RecoveryPrompt, signal)
}

// ContinuePrompt is the prompt of a deliberate resume that carries none
// (restart): the spec's continue nudge.
const ContinuePrompt = "[Zimmer] Your session was restarted; continue where you left off."

// SystemRecoveryPrompt is the standing text of every recovery nudge.
const SystemRecoveryPrompt = recoveryMark + " Your previous turn was interrupted before it finished " +
	"(nothing you did was lost on purpose); continue where you left off."

// RecoveryNudge is the prompt of a recovery turn: the standing text, then
// one line naming the path that sent it and why, so neither the agent nor a
// human reading over its shoulder has to guess (the spec's
// system_recovery(reason:)).
func RecoveryNudge(path, cause string) string {
	line := "Recovery path: " + path
	if cause != "" {
		line += " (" + cause + ")"
	}
	return SystemRecoveryPrompt + "\n" + line + "."
}

// The failure reasons the runner records on a session (its failure_reason),
// and the reason it gives when it abandons a recovery: each says what
// happened and what a person can do.

// ShutdownsReason: the runner node shut down during the turn more than
// MaxShutdownRetries times in a row.
func ShutdownsReason(node string) string {
	return fmt.Sprintf("The runner node %q shut down during this session's turn %d times in a row; Zimmer stopped retrying it. "+
		"Restart the session once the node is stable.", node, MaxShutdownRetries+1)
}

// SignalDeathsReason: the process died by a signal Zimmer did not send more
// than MaxSignalRecoveries times in a row.
func SignalDeathsReason(signal string, stderr []string) string {
	return fmt.Sprintf("The agent's process died by %s, which Zimmer did not send, %d times in a row; Zimmer stopped resuming it. %s",
		signal, MaxSignalRecoveries+1, StderrTail(stderr))
}

// ExitReason: the process exited non-zero, or with an unknown status.
func ExitReason(end TurnEnd, stderr []string) string {
	if !end.StatusKnown {
		return "The agent's process ended with an unknown status. " + StderrTail(stderr)
	}
	return fmt.Sprintf("The agent exited with code %d. %s", end.ExitCode, StderrTail(stderr))
}

// StartReplaysReason: a first turn was lost, before its runtime began a
// conversation, more than MaxStartReplays times.
func StartReplaysReason(replays int, cause, node string) string {
	return fmt.Sprintf("The agent's first turn was lost %d times before its runtime began a conversation (last: %s); "+
		"Zimmer stopped replaying it. Check the runner node %q, then restart the session.", replays+1, cause, node)
}

// RecoveriesReason is why Zimmer abandons recovering a session whose
// recoveries reached MaxRecoveries without a turn finishing.
func RecoveriesReason(recoveries int, path, cause string) string {
	return fmt.Sprintf("Zimmer recovered this session %d times in a row without a turn finishing (last: %s, %s); "+
		"it stopped recovering it. Restart the session when its cause is fixed.", recoveries, path, cause)
}

// StopFailedReason: a live node could not stop a lost turn's process.
func StopFailedReason(node, turnID, why string) string {
	return fmt.Sprintf("The runner node %q could not stop the lost turn %s's process (%s); Zimmer will not start another "+
		"beside it. Check the node, then restart the session.", node, turnID, why)
}

// NodeDeadReason: the node holding the clone lost a turn and stayed away
// for deadAfter.
func NodeDeadReason(node, turnID, cause string, deadAfter time.Duration, gitRoot string) string {
	return fmt.Sprintf("The runner node %q, which holds this session's clone, lost turn %s (%s) and did not come back "+
		"within %s; Zimmer declared it dead. Restart the session to run it on a live node: its clone is made anew there "+
		"from %s, and work not pushed from node %q stays on that node's disk.",
		node, turnID, cause, deadAfter, gitRoot, node)
}

// PrepareGaveUpReason: the clone could not be made after every attempt.
func PrepareGaveUpReason(why string) string {
	return "The runner could not prepare the session's clone after several attempts: " + why +
		". Check the runner's logs and disk, then restart the session."
}

// NotStartedReason: the agent process could not be started.
func NotStartedReason(why string) string { return "The agent could not be started: " + why }

// LostProcessReason: the node stopped heartbeating a turn that was not
// recovered.
func LostProcessReason(why string) string {
	return "The runner lost the agent's process (no heartbeat from its node): " + why + ". Restart the session to run a new turn."
}

// TurnFailedReason: the turn failed in the runner for any other reason.
func TurnFailedReason(why string) string {
	return "The agent's turn failed in the runner: " + why + ". Restart the session to run a new turn."
}

// failureTailLines bounds the stderr quoted in a failure_reason: its last
// lines say what went wrong, the rest is in the transcript.
const failureTailLines = 5

// maxTailChars bounds the quoted stderr in characters.
const maxTailChars = 1500

// StderrTail quotes the last lines of a process's stderr for a failure
// reason.
func StderrTail(lines []string) string {
	if len(lines) == 0 {
		return "It wrote nothing on stderr."
	}
	if len(lines) > failureTailLines {
		lines = lines[len(lines)-failureTailLines:]
	}
	tail := strings.Join(lines, "\n")
	if r := []rune(tail); len(r) > maxTailChars {
		tail = "…" + string(r[len(r)-maxTailChars:])
	}
	return "Last stderr lines:\n" + tail
}
