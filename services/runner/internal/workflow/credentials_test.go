package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// Issue 20: a runner stopped mid-turn (Ctrl-C) reports the turn shut down,
// but its own revocation of the turn's credential met a lifecycle already
// down. The workflow revokes the turn's credentials itself, retrying until
// lifecycle answers, before anything else of the session happens.
func TestAStoppedTurnsCredentialsAreRevokedUntilTheRevocationLands(t *testing.T) {
	t.Parallel()
	shut := rw.TurnResult{Shutdown: true, Signal: "SIGTERM", SignalSentByUs: true, StatusKnown: true, ExitCode: -1}
	h := newRecoveryHarness(t, turnOutcome{result: shut}, turnOutcome{result: exited(0)})
	h.states = []rw.SessionState{{Status: "running"}}
	h.revokeFails = 5
	h.runFrom(ran(), 1, resumeReq("job-a", "fix the bug"))

	require.Len(t, h.turns, 2, "the stopped turn is retried on the node's next runner")
	require.Equal(t, 7, h.revokeAttempts, "five attempts met lifecycle down; the sixth landed, then the retry's own")
	require.Equal(t, []rw.TurnCredentialsRequest{{SessionID: sessionID, TurnID: "job-a"}, {SessionID: sessionID, TurnID: h.turns[1].TurnID}},
		h.revocations, "every turn's credentials end with it, the stopped one's first")
}

// Every way a turn ends revokes its credentials: a clean exit, a failure
// to start, a death by signal.
func TestEveryTurnsEndRevokesItsCredentials(t *testing.T) {
	t.Parallel()
	for name, outcome := range map[string]turnOutcome{
		"exit 0":        {result: exited(0)},
		"exit 3":        {result: exited(3)},
		"killed by us":  {result: rw.TurnResult{ExitCode: -1, Signal: "SIGTERM", SignalSentByUs: true, StatusKnown: true}},
		"did not start": {err: errNotStarted()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newRecoveryHarness(t, outcome)
			h.states = []rw.SessionState{{Status: "running"}}
			h.runFrom(ran(), 1, resumeReq("job-a", "fix the bug"))
			require.Equal(t, []rw.TurnCredentialsRequest{{SessionID: sessionID, TurnID: "job-a"}}, h.revocations)
		})
	}
}

func errNotStarted() error {
	return temporal.NewNonRetryableApplicationError("unknown runtime", rw.ErrTurnNotStarted, nil)
}
