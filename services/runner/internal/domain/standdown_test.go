package domain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

func TestDecideIsTheStandDownTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		s         domain.SessionState
		confirmed bool
		want      domain.Decision
	}{
		{"still running", domain.SessionState{Status: "running"}, true, domain.Recover},
		{"still running, the runtime never began", domain.SessionState{Status: "running"}, false, domain.ReplayStart},
		{"finished its turn (no paused_by)", domain.SessionState{Status: "needs_input"}, true, domain.StandDown},
		{"paused by a user", domain.SessionState{Status: "needs_input", PausedBy: "user"}, true, domain.StandDown},
		{"parked by a recovery", domain.SessionState{Status: "needs_input", PausedBy: "recovery"}, true, domain.Recover},
		{"parked for an MCP retry", domain.SessionState{Status: "needs_input", PausedBy: "mcp_retry"}, true, domain.Recover},
		{"blocked on an elicitation", domain.SessionState{Status: "needs_input", BlockedOnElicitation: true}, true, domain.Recover},
		{"asleep on a wake ahead", domain.SessionState{Status: "waiting", AwaitingWake: true}, true, domain.StandDown},
		{"asleep on a wake ahead, never began", domain.SessionState{Status: "waiting", AwaitingWake: true}, false, domain.StandDown},
		{"waiting, stranded mid-start", domain.SessionState{Status: "waiting"}, true, domain.Recover},
		{"waiting, no conversation yet", domain.SessionState{Status: "waiting"}, false, domain.ReplayStart},
		{"failed", domain.SessionState{Status: "failed"}, true, domain.StandDown},
		{"archived", domain.SessionState{Status: "archived"}, true, domain.StandDown},
		{"deleted", domain.SessionState{Status: "deleted"}, true, domain.StandDown},
	} {
		require.Equal(t, c.want, domain.Decide(c.s, c.confirmed), c.name)
	}
}

// PlanLoss: the stand-down table, then each decision's budget (one below
// it runs, at it the decision is exhausted), then whether the session must
// be parked first and the queue asked before the nudge.
func TestPlanLossSpendsEachDecisionsBudget(t *testing.T) {
	t.Parallel()
	running := domain.SessionState{Status: rules.StatusRunning}
	parked := domain.SessionState{Status: rules.StatusNeedsInput, PausedBy: rules.PausedByRecovery}
	finished := domain.SessionState{Status: rules.StatusNeedsInput}
	for _, c := range []struct {
		name                     string
		s                        domain.SessionState
		confirmed                bool
		recoveries, startReplays int
		want                     domain.LossPlan
	}{
		{"at rest: nothing, whatever was spent", finished, true, domain.MaxRecoveries, domain.MaxStartReplays,
			domain.LossPlan{Decision: domain.StandDown}},
		{"running: the queue first, then parked", running, true, 0, 0,
			domain.LossPlan{Decision: domain.Recover, Park: true, DrainFirst: true}},
		{"the last recovery of the budget", running, true, domain.MaxRecoveries - 1, 0,
			domain.LossPlan{Decision: domain.Recover, Park: true, DrainFirst: true}},
		{"the budget spent: abandoned, parked to rest", running, true, domain.MaxRecoveries, 0,
			domain.LossPlan{Decision: domain.Recover, Exhausted: true, Park: true}},
		{"parked already: resumed as it is", parked, true, 3, 0,
			domain.LossPlan{Decision: domain.Recover}},
		{"parked already, the budget spent", parked, true, domain.MaxRecoveries, 0,
			domain.LossPlan{Decision: domain.Recover, Exhausted: true}},
		{"never began: the start replayed, no queue asked", running, false, 0, 0,
			domain.LossPlan{Decision: domain.ReplayStart, Park: true}},
		{"the last replay of the budget", running, false, 0, domain.MaxStartReplays - 1,
			domain.LossPlan{Decision: domain.ReplayStart, Park: true}},
		{"the replays spent: the session fails", running, false, 0, domain.MaxStartReplays,
			domain.LossPlan{Decision: domain.ReplayStart, Exhausted: true, Park: true}},
		{"stranded mid-start", domain.SessionState{Status: rules.StatusWaiting}, false, 0, 0,
			domain.LossPlan{Decision: domain.ReplayStart}},
	} {
		require.Equal(t, c.want, domain.PlanLoss(c.s, c.confirmed, c.recoveries, c.startReplays), c.name)
	}
}

func TestTheBudgetsAreTheSpecs(t *testing.T) {
	t.Parallel()
	require.Equal(t, 3, domain.MaxSignalRecoveries, "MAX_SIGNAL_DEATH_RETRIES")
	require.Equal(t, 12, domain.MaxRecoveries, "the auto-continue budget")
	require.Equal(t, 20, domain.MaxStartReplays)
	require.Equal(t, 3, domain.MaxShutdownRetries)
}

func TestLeftRunningAndArrivalReadLifecyclesWords(t *testing.T) {
	t.Parallel()
	require.False(t, domain.SessionState{Status: rules.StatusRunning}.LeftRunning())
	require.False(t, domain.SessionState{Status: rules.StatusNeedsInput, BlockedOnElicitation: true}.LeftRunning(),
		"the process lives through an elicitation")
	require.True(t, domain.SessionState{Status: rules.StatusNeedsInput, PausedBy: "user"}.LeftRunning())
	require.True(t, domain.SessionState{Status: domain.StatusGone}.LeftRunning())
	for event, status := range map[string]string{
		rules.EventStart: rules.StatusRunning, rules.EventResume: rules.StatusRunning,
		rules.EventUnblockFromElicitation: rules.StatusRunning, rules.EventPause: rules.StatusNeedsInput,
		rules.EventBlockOnElicitation: rules.StatusNeedsInput, rules.EventFail: rules.StatusFailed,
	} {
		require.Equal(t, status, domain.Arrival(event), event)
	}
	require.Empty(t, domain.Arrival("no_such_event"))
}
