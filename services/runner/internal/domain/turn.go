package domain

// Budgets of automatic recovery (session-lifecycle.md).
const (
	// MaxSignalRecoveries is how many turns in a row that died by a signal
	// Zimmer did not send are resumed with system recovery; the next such
	// death fails the session (the spec's MAX_SIGNAL_DEATH_RETRIES).
	MaxSignalRecoveries = 3
	// MaxRecoveries is the auto-continue budget: automatic recoveries in a
	// row without a clean exit before Zimmer gives up (AbandonRecovery).
	MaxRecoveries = 12
	// MaxStartReplays bounds replaying a first turn lost before the
	// runtime confirmed its conversation; then the session fails.
	MaxStartReplays = 20
	// MaxShutdownRetries bounds retrying turns a runner shutdown stopped,
	// in a row; the next one fails the session.
	MaxShutdownRetries = 3
)

// TurnEnd is how a turn's process ended, as RunTurn reported it.
type TurnEnd struct {
	// Shutdown: the runner node was shutting down and stopped the process
	// by the ladder.
	Shutdown bool
	// StatusKnown is false when the exit status was lost.
	StatusKnown bool
	ExitCode    int
	// Signal names the signal the process died by ("SIGKILL"), "" when it
	// exited; SignalSentByUs says Zimmer sent it.
	Signal         string
	SignalSentByUs bool
}

// Next is what follows a turn's end: the turn-state table's outcome.
type Next int

// What follows a turn's end.
const (
	// NextRoute: a clean exit; the queue may hand the next turn over, else
	// the session pauses.
	NextRoute Next = iota
	// NextLeave: Zimmer stopped the process (a pause, an archive): whoever
	// asked owns the session's next state.
	NextLeave
	// NextResumeAfterSignal: a death by a signal Zimmer did not send, within
	// MaxSignalRecoveries: pause (paused_by PausedByRecovery) and resume
	// with system recovery, the prompt carrying RecoveryPrompt.
	NextResumeAfterSignal
	// NextRetryShutdown: the runner shut down mid-turn, within
	// MaxShutdownRetries: the turn is recovered (PathRunnerShutdown).
	NextRetryShutdown
	// NextFail: the session fails with FailureReason.
	NextFail
)

// AfterTurn is the turn-state table: what follows end, given the deaths by
// signal and the shutdowns the turn's recoveries already met in a row. It
// returns the failure reason with NextFail; node names the runner node for
// it.
func AfterTurn(end TurnEnd, signalRecoveries, shutdowns int, node string, stderr []string) (Next, string) {
	switch {
	case end.Shutdown && shutdowns >= MaxShutdownRetries:
		return NextFail, ShutdownsReason(node)
	case end.Shutdown:
		return NextRetryShutdown, ""
	case end.StatusKnown && end.Signal == "" && end.ExitCode == 0:
		return NextRoute, ""
	case end.Signal != "" && end.SignalSentByUs:
		return NextLeave, ""
	case end.Signal != "" && signalRecoveries < MaxSignalRecoveries:
		return NextResumeAfterSignal, ""
	case end.Signal != "":
		return NextFail, SignalDeathsReason(end.Signal, stderr)
	}
	return NextFail, ExitReason(end, stderr)
}
