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

// PlanLoss: the stand-down table, then whether the recovery can continue
// (rule 13: a running session it cannot continue is parked), then each
// decision's budget (one below it runs, at it the decision is exhausted),
// then whether the session must be parked first and the queue asked
// before the nudge.
func TestPlanLossSpendsEachDecisionsBudget(t *testing.T) {
	t.Parallel()
	running := domain.SessionState{Status: rules.StatusRunning}
	parked := domain.SessionState{Status: rules.StatusNeedsInput, PausedBy: rules.PausedByRecovery}
	finished := domain.SessionState{Status: rules.StatusNeedsInput}
	interrupted := domain.Loss{Path: domain.PathInterruptedTurn, Confirmed: true}
	neverBegan := domain.Loss{Path: domain.PathInterruptedTurn}
	cloneGone := domain.Loss{Path: domain.PathInterruptedTurn, Confirmed: true, CloneGone: true}
	found := domain.Loss{Path: domain.PathOrphanSweep, Confirmed: true}
	rowOf := func(s domain.SessionState) domain.Row { return domain.RowFor(s) }
	for _, c := range []struct {
		name                     string
		s                        domain.SessionState
		loss                     domain.Loss
		recoveries, startReplays int
		want                     domain.LossPlan
	}{
		{"at rest: nothing, whatever was spent", finished, interrupted, domain.MaxRecoveries, domain.MaxStartReplays,
			domain.LossPlan{Decision: domain.StandDown, Row: rowOf(finished)}},
		{"running: the queue first, then parked", running, interrupted, 0, 0,
			domain.LossPlan{Decision: domain.Recover, Row: rowOf(running), Park: true, DrainFirst: true}},
		{"the last recovery of the budget", running, interrupted, domain.MaxRecoveries - 1, 0,
			domain.LossPlan{Decision: domain.Recover, Row: rowOf(running), Park: true, DrainFirst: true}},
		{"the budget spent: abandoned, parked to rest", running, interrupted, domain.MaxRecoveries, 0,
			domain.LossPlan{Decision: domain.Recover, Row: rowOf(running), Exhausted: true, Park: true}},
		{"parked already: resumed as it is", parked, interrupted, 3, 0,
			domain.LossPlan{Decision: domain.Recover, Row: rowOf(parked)}},
		{"parked already, the budget spent", parked, interrupted, domain.MaxRecoveries, 0,
			domain.LossPlan{Decision: domain.Recover, Row: rowOf(parked), Exhausted: true}},
		{"never began, still running: parked, no queue asked", running, neverBegan, 0, 0,
			domain.LossPlan{Decision: domain.Park, Row: rowOf(running), Park: true, Cannot: domain.CannotNoConversation}},
		{"never began, whatever was spent: parked", running, neverBegan, 0, domain.MaxStartReplays,
			domain.LossPlan{Decision: domain.Park, Row: rowOf(running), Park: true, Cannot: domain.CannotNoConversation}},
		{"never began, picked up parked: the start replayed", parked, neverBegan, 0, domain.MaxStartReplays - 1,
			domain.LossPlan{Decision: domain.ReplayStart, Row: rowOf(parked)}},
		{"the replays spent: the session fails", parked, neverBegan, 0, domain.MaxStartReplays,
			domain.LossPlan{Decision: domain.ReplayStart, Row: rowOf(parked), Exhausted: true}},
		{"stranded mid-start", domain.SessionState{Status: rules.StatusWaiting}, neverBegan, 0, 0,
			domain.LossPlan{Decision: domain.ReplayStart, Row: rowOf(domain.SessionState{Status: rules.StatusWaiting})}},
		{"the clone gone, still running: parked", running, cloneGone, 0, 0,
			domain.LossPlan{Decision: domain.Park, Row: rowOf(running), Park: true, Cannot: domain.CannotCloneGone}},
		{"the clone gone, parked already: stays parked", parked, cloneGone, domain.MaxRecoveries - 1, 0,
			domain.LossPlan{Decision: domain.Park, Row: rowOf(parked), Cannot: domain.CannotCloneGone}},
		{"the clone gone through the budget: given up", parked, cloneGone, domain.MaxRecoveries, 0,
			domain.LossPlan{Decision: domain.Park, Row: rowOf(parked), Exhausted: true, Cannot: domain.CannotCloneGone}},
		{"a dead agent found: the queue first, else parked", running, found, 0, 0,
			domain.LossPlan{Decision: domain.Park, Row: rowOf(running), Park: true, DrainFirst: true, Cannot: domain.CannotNothingQueued}},
		{"a parked session found: resumed with the nudge", parked, found, 0, 0,
			domain.LossPlan{Decision: domain.Recover, Row: rowOf(parked)}},
	} {
		got := domain.PlanLoss(c.s, c.loss, c.recoveries, c.startReplays)
		require.Equal(t, c.want.Decision, got.Decision, c.name)
		require.Equal(t, c.want.Row.Session, got.Row.Session, c.name)
		require.Equal(t, c.want.Row.Recovers, got.Row.Recovers, c.name)
		require.Equal(t, [3]bool{c.want.Exhausted, c.want.Park, c.want.DrainFirst}, [3]bool{got.Exhausted, got.Park, got.DrainFirst}, c.name)
		require.Equal(t, c.want.Cannot, got.Cannot, c.name)
	}
}

// Every row of the stand-down table is named, and decides as the spec
// says; the name is what the timeline shows.
func TestEachRowOfTheStandDownTableSaysWhy(t *testing.T) {
	t.Parallel()
	for s, want := range map[domain.SessionState]string{
		{Status: "running"}: "running: its turn was interrupted",
		{Status: "needs_input", BlockedOnElicitation: true}: "needs_input, blocked on an elicitation whose process is gone",
		{Status: "needs_input", PausedBy: "recovery"}:       "needs_input with paused_by: recovery: an earlier recovery parked it",
		{Status: "needs_input", PausedBy: "mcp_retry"}:      "needs_input with paused_by: mcp_retry: parked for a delayed retry",
		{Status: "needs_input"}:                             "needs_input with no paused_by: its turn had finished, nothing was interrupted",
		{Status: "needs_input", PausedBy: "user"}:           "needs_input, paused on purpose: the pause was deliberate",
		{Status: "waiting", AwaitingWake: true}:             "waiting, asleep on a wake still ahead: the wake will fire",
		{Status: "waiting", PausedBy: "auth_outage"}:        "waiting, parked on its login pool (paused_by: auth_outage): the pool's refill resumes it",
		{Status: "waiting"}:                                 "waiting with no wake ahead: stranded mid-start or mid-sleep",
		{Status: "failed"}:                                  "failed, archived or deleted: at rest for good",
		{Status: domain.StatusGone}:                         "failed, archived or deleted: at rest for good",
	} {
		row := domain.RowFor(s)
		require.Equal(t, want, row.Session, "%+v", s)
		require.Equal(t, row.Recovers, domain.Decide(s, true) != domain.StandDown, "%+v", s)
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
