package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// AfterTurn is the turn-state table: every row, and each budget one below
// and at its bound.
func TestAfterTurnIsTheTurnStateTable(t *testing.T) {
	t.Parallel()
	exited := func(code int) domain.TurnEnd { return domain.TurnEnd{StatusKnown: true, ExitCode: code} }
	killed := func(byUs bool) domain.TurnEnd {
		return domain.TurnEnd{StatusKnown: true, Signal: "SIGKILL", SignalSentByUs: byUs}
	}
	shutdown := domain.TurnEnd{Shutdown: true, StatusKnown: true, Signal: "SIGTERM", SignalSentByUs: true}
	for _, c := range []struct {
		name               string
		end                domain.TurnEnd
		signals, shutdowns int
		want               domain.Next
		reasonHas          string
	}{
		{"a clean exit is routed", exited(0), 0, 0, domain.NextRoute, ""},
		{"a clean exit after recoveries is routed", exited(0), domain.MaxSignalRecoveries, domain.MaxShutdownRetries, domain.NextRoute, ""},
		{"Zimmer's own signal leaves it to the caller", killed(true), 0, 0, domain.NextLeave, ""},
		{"a foreign signal is resumed", killed(false), 0, 0, domain.NextResumeAfterSignal, ""},
		{"the last signal recovery of the budget", killed(false), domain.MaxSignalRecoveries - 1, 0, domain.NextResumeAfterSignal, ""},
		{"the signal budget spent fails", killed(false), domain.MaxSignalRecoveries, 0, domain.NextFail, "died by SIGKILL, which Zimmer did not send, 4 times in a row"},
		{"a shutdown is retried", shutdown, 0, 0, domain.NextRetryShutdown, ""},
		{"the last shutdown retry of the budget", shutdown, 0, domain.MaxShutdownRetries - 1, domain.NextRetryShutdown, ""},
		{"the shutdown budget spent fails", shutdown, 0, domain.MaxShutdownRetries, domain.NextFail, `node "n1" shut down during this session's turn 4 times in a row`},
		{"a non-zero exit fails", exited(2), 0, 0, domain.NextFail, "The agent exited with code 2."},
		{"an unknown status fails", domain.TurnEnd{}, 0, 0, domain.NextFail, "ended with an unknown status"},
	} {
		next, reason := domain.AfterTurn(c.end, c.signals, c.shutdowns, "n1", []string{"boom"})
		require.Equal(t, c.want, next, c.name)
		if c.reasonHas == "" {
			require.Empty(t, reason, c.name)
			continue
		}
		require.Contains(t, reason, c.reasonHas, c.name)
	}
}

func TestTheWordsLeftOnASession(t *testing.T) {
	t.Parallel()
	require.Equal(t, "It wrote nothing on stderr.", domain.StderrTail(nil))
	require.Equal(t, "Last stderr lines:\nc\nd\ne\nf\ng", domain.StderrTail(strings.Split("a b c d e f g", " ")), "the last five lines")
	long := domain.StderrTail([]string{strings.Repeat("x", 2000)})
	require.True(t, strings.HasPrefix(long, "Last stderr lines:\n…"))
	require.Len(t, []rune(long), len("Last stderr lines:\n")+1+1500)

	nudge := domain.RecoveryNudge(domain.PathOrphanSweep, "the session had no live turn")
	require.Equal(t, domain.SystemRecoveryPrompt+"\nRecovery path: orphan sweep (the session had no live turn).", nudge)
	resumed := domain.AfterSignalDeath("build it", "SIGKILL")
	require.Equal(t, "build it\n\n[Zimmer system recovery] Your previous process died by a signal Zimmer did not send (SIGKILL); continue where you left off.", resumed)
	require.Equal(t, resumed, domain.AfterSignalDeath(resumed, "SIGSEGV"), "said once")
}
