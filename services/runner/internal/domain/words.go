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

// IsSystemRecovery reports whether a turn's text is a recovery nudge (the
// spec's AutomatedPrompts.system_recovery?): compare with it, never with
// the constant, since a nudge names its path after the standing text.
func IsSystemRecovery(text string) bool {
	return strings.Contains(text, recoveryMark)
}

// AfterSignalDeath is the prompt of the turn that resumes one whose process
// died by signal: the lost turn's, with RecoveryPrompt appended once.
func AfterSignalDeath(prompt, signal string) string {
	if IsSystemRecovery(prompt) {
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

// CloneGoneReason is why Zimmer abandons recovering a parked session whose
// clone stayed gone from its node through the whole recovery budget.
func CloneGoneReason(attempts int, node string) string {
	return fmt.Sprintf("Zimmer found this session's clone gone from runner node %q %d times in a row; it stopped "+
		"recovering it. Restore or re-clone the work, then restart the session.", node, attempts)
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

// The lines recovery writes on a session's timeline: one per decision, so
// the operator reads there what the runner decided and why, not only in its
// log. A decision that moves the session (a park, a resume) writes its line
// once its transitions are made; the state machine's own lines say the
// moves. An abandoned recovery's line is lifecycle's (AbandonRecovery), a
// failed one's the failure reason.

// recoveryLine starts every recovery line.
const recoveryLine = "[Recovery] "

// StoodDownLine: the stand-down table's row said the session is at rest.
func StoodDownLine(turn, cause string, row Row) string {
	return fmt.Sprintf(recoveryLine+"Turn %s was lost (%s); Zimmer stood down, as the stand-down table says for a session %s.",
		turn, cause, row.Session)
}

// NudgedLine: the session was resumed with the recovery nudge naming its
// path, as turn next; n is the recovery's place in the budget.
func NudgedLine(turn, path, cause, next string, n int) string {
	return fmt.Sprintf(recoveryLine+"Turn %s was lost (%s); Zimmer resumed the session with the recovery nudge "+
		"(path: %s; recovery %d of %d) as turn %s.", turn, cause, path, n, MaxRecoveries, next)
}

// ReplayedLine: the first prompt runs again in a fresh conversation, as
// turn next; n is the replay's place in the budget.
func ReplayedLine(turn, cause, next string, n int) string {
	return fmt.Sprintf(recoveryLine+"Turn %s was lost before its runtime began a conversation (%s); Zimmer replayed "+
		"the start: the first prompt runs again in a fresh conversation (replay %d of %d) as turn %s.",
		turn, cause, n, MaxStartReplays, next)
}

// HandedOverLine: the queue's next message runs instead of the recovery
// nudge, as turn next; whatever else is queued stays pending behind it.
func HandedOverLine(turn, cause, next string) string {
	return fmt.Sprintf(recoveryLine+"Turn %s was lost (%s); the queue's next message runs instead of the recovery "+
		"nudge, as turn %s, and the rest of the queue stays pending behind it.", turn, cause, next)
}

// ParkedLine: the recovery cannot continue the session (cannot says why);
// it rests in needs_input with paused_by: recovery.
func ParkedLine(turn, cause, cannot string) string {
	return fmt.Sprintf(recoveryLine+"The agent's process of turn %s is no longer running (%s), and %s: Zimmer parked "+
		"the session (needs_input, paused_by: recovery) for a human or the orphan sweep to pick up, instead of "+
		"resuming it at once.", turn, cause, cannot)
}

// StillParkedLine: the orphan sweep picked a parked session up, and it
// still cannot be continued (cannot says why); n is the attempt's place in
// the recovery budget.
func StillParkedLine(cannot string, n int) string {
	return fmt.Sprintf(recoveryLine+"The orphan sweep could not continue the session: %s (attempt %d of %d); it stays "+
		"parked (paused_by: recovery) for a human or the next sweep.", cannot, n, MaxRecoveries)
}
