package workflow_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	rw "github.com/zimmerhq/zimmer/services/runner/internal/workflow"
)

// pool mocks the login pool's activities on a harness: every turn runs
// under account "a", a park answers reason, and the session reads as
// state (its time of reading recorded).
type poolMock struct {
	mu       sync.Mutex
	parks    []rw.ParkRequest
	unparks  int
	chosen   []rw.ChooseAccountRequest
	state    rw.SessionState
	readAt   []time.Time
	pausedAt time.Time
}

func (h *harness) mockPool(reason string, until time.Time) *poolMock {
	p := &poolMock{state: rw.SessionState{Status: "waiting", PausedBy: "auth_outage"}}
	h.env.OnActivity(rw.ActivityChooseAccount, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req rw.ChooseAccountRequest) (domain.Choice, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.chosen = append(p.chosen, req)
			return domain.Choice{Run: true, Account: "a"}, nil
		}).Maybe()
	h.env.OnActivity(rw.ActivityParkOnPool, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req rw.ParkRequest) (rw.ParkResult, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.parks = append(p.parks, req)
			p.pausedAt = h.env.Now()
			return rw.ParkResult{Reason: reason, Until: until}, nil
		}).Maybe()
	h.env.OnActivity(rw.ActivityUnpark, mock.Anything, mock.Anything).Return(
		func(context.Context, int64) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.unparks++
			return nil
		}).Maybe()
	h.env.OnActivity(rw.ActivitySessionState, mock.Anything, mock.Anything).Return(
		func(context.Context, int64) (rw.SessionState, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.readAt = append(p.readAt, h.env.Now())
			return p.state, nil
		}).Maybe()
	return p
}

func walled(resetAt time.Time) rw.TurnResult {
	r := exited(1)
	r.Wall = &rw.WallInfo{Kind: "quota", Message: "Claude AI usage limit reached|1", ResetAt: resetAt, ResetKnown: true}
	return r
}

// TestAWallParksTheSessionAndTheRefillDeliversItsMessageOnce: a turn that
// hits its login's wall is not a failure: the session parks (pause with
// auth_outage_reason) keeping the message, and the refill's unpark, an
// hour later on the mocked clock, resumes it with that message and the
// nudge naming the park — one more turn, the message in it once.
func TestAWallParksTheSessionAndTheRefillDeliversItsMessageOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	start := h.env.Now()
	reset := start.Add(time.Hour)
	reason := `the demo account "a" hit its usage limit; resets at ` + reset.Format(time.RFC3339)
	p := h.mockPool(reason, reset)
	h.onTurns(time.Second, exited(0), walled(reset), exited(0))
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalTurn, rw.TurnRequest{RequestID: "unpark/7/1", Kind: rw.KindUnpark})
	}, time.Hour)
	h.run(3, first("hello"), rw.TurnRequest{RequestID: "ev-2", Kind: rw.KindResume, JobID: "job-2", Prompt: "the message", Session: spec})

	require.Equal(t, []string{rw.EventStart, rw.EventPause, rw.EventPause, rw.EventResume, rw.EventPause}, h.events(),
		"the wall parks (no fail); the refill resumes")
	park := h.transitions[2]
	require.Equal(t, reason, park.AuthOutageReason, "the park's pause carries the reason")
	require.Len(t, p.parks, 1)
	require.Equal(t, "a", p.parks[0].Account)
	require.NotNil(t, p.parks[0].Wall)
	require.True(t, reset.Equal(p.parks[0].Wall.ResetAt))

	resume := h.transitions[3]
	require.True(t, resume.SystemRecovery, "the refill's resume keeps what the session had armed")
	require.Equal(t, "session-7/turn-3", resume.RunningJobID)
	require.Len(t, p.readAt, 1)
	require.GreaterOrEqual(t, p.readAt[0].Sub(start), time.Hour, "nothing resumes it before the refill")

	require.Len(t, h.turns, 3)
	require.Equal(t, "the message", h.turns[1].Prompt)
	require.Equal(t, domain.UnparkPrompt("the message", reason), h.turns[2].Prompt, "the same message, once, with the nudge naming the park")
	for _, turn := range h.turns {
		require.Equal(t, "a", turn.Account, "every turn runs under the pool's account")
	}
	require.Equal(t, 1, p.unparks, "the park is forgotten once it is resumed")
	require.Equal(t, []string{"", "a", "a"}, []string{p.chosen[0].Sticky, p.chosen[1].Sticky, p.chosen[2].Sticky},
		"the session keeps the account its conversation began under")
}

// TestTheRefillSkipsASleeperWhoseNextTurnTakesTheMessage: a parked session
// asleep on a wake is not resumed by the refill (its wake would be
// consumed); the next turn anyone gives it takes the parked message
// first.
func TestTheRefillSkipsASleeperWhoseNextTurnTakesTheMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	reset := h.env.Now().Add(time.Hour)
	p := h.mockPool("parked", reset)
	p.state.AwaitingWake = true
	h.onTurns(time.Second, exited(0), walled(reset), exited(0))
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalTurn, rw.TurnRequest{RequestID: "unpark/7/1", Kind: rw.KindUnpark})
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(rw.SignalTurn, rw.TurnRequest{RequestID: "wake-1", Kind: rw.KindResume, JobID: "job-4", Prompt: "wake up", Session: spec})
	}, 2*time.Hour)
	h.run(4, first("hello"), rw.TurnRequest{RequestID: "ev-2", Kind: rw.KindResume, JobID: "job-2", Prompt: "the message", Session: spec})

	require.Equal(t, []string{rw.EventStart, rw.EventPause, rw.EventPause, rw.EventPause}, h.events(),
		"no resume by the refill: the wake's own turn ran")
	require.Len(t, h.turns, 3)
	require.Equal(t, "the message\n\nwake up", h.turns[2].Prompt, "the parked message first, then the wake's")
	require.Equal(t, 1, p.unparks)
}

// TestADryPoolParksBeforeAnyProcessStarts: when the session's account has
// no capacity the turn starts no process; it parks until the account is
// back, with the pool's reason.
func TestADryPoolParksBeforeAnyProcessStarts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	until := h.env.Now().Add(30 * time.Minute)
	h.env.OnActivity(rw.ActivityChooseAccount, mock.Anything, mock.Anything).Return(
		domain.Choice{Account: "a", Until: until, Reason: "the demo login pool is dry"}, nil).Once()
	var parks []rw.ParkRequest
	h.env.OnActivity(rw.ActivityParkOnPool, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req rw.ParkRequest) (rw.ParkResult, error) {
			parks = append(parks, req)
			return rw.ParkResult{Reason: req.Reason, Until: req.Until}, nil
		}).Once()
	h.onTurns(time.Second)
	h.run(1, first("hello"))

	require.Equal(t, []string{rw.EventStart, rw.EventPause}, h.events())
	require.Equal(t, "the demo login pool is dry", h.transitions[1].AuthOutageReason)
	require.Empty(t, h.turns, "no process ran")
	require.Len(t, parks, 1)
	require.Nil(t, parks[0].Wall)
	require.True(t, until.Equal(parks[0].Until))
}

// TestTheRefillWaitsForTheAccountThenWakesItsSessions: the refill sleeps
// on Temporal's clock until the account has capacity, reads again after
// each sleep (a later wall moved it), and only then wakes the parked
// sessions.
func TestTheRefillWaitsForTheAccountThenWakesItsSessions(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(rw.AccountRefill, workflow.RegisterOptions{Name: rw.RefillWorkflowName})
	acts := &rw.Activities{}
	acts.RegisterShared(env)
	start := env.Now()
	answers := []time.Time{start.Add(2 * time.Hour), start.Add(3 * time.Hour), start.Add(3 * time.Hour)}
	var asked []time.Time
	env.OnActivity(rw.ActivityAccountAvailableAt, mock.Anything, mock.Anything).Return(
		func(context.Context, rw.RefillRequest) (time.Time, error) {
			asked = append(asked, env.Now())
			a := answers[0]
			answers = answers[1:]
			return a, nil
		})
	var woke []time.Time
	env.OnActivity(rw.ActivityWakeParked, mock.Anything, rw.RefillRequest{Runtime: "claude_code", Account: "a"}).Return(
		func(context.Context, rw.RefillRequest) (int, error) {
			woke = append(woke, env.Now())
			return 2, nil
		}).Once()
	env.ExecuteWorkflow(rw.RefillWorkflowName, rw.RefillRequest{Runtime: "claude_code", Account: "a"})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, asked, 3, "asked at the start, after the first sleep (a later wall), after the second")
	require.Len(t, woke, 1)
	require.GreaterOrEqual(t, woke[0].Sub(start), 3*time.Hour, "never before the account is back")
	require.Equal(t, "accounts/claude_code/a/refill", rw.RefillID("claude_code", "a"))
}

// loginsOnly is a pool that knows one login (RunTurn asks nothing else).
type loginsOnly struct {
	rw.AccountPool
	login agent.Login
}

func (p loginsOnly) Login(runtime, account string) (agent.Login, bool) {
	return p.login, runtime == p.login.Runtime && account == p.login.Name
}

// TestRunTurnRunsUnderItsAccountAndReportsItsWall: the turn's process gets
// its account's login (the demo agent's state lands in the account's
// configuration directory), and the wall it hits comes back typed, with
// the reset the CLI named, not as an error.
func TestRunTurnRunsUnderItsAccountAndReportsItsWall(t *testing.T) {
	t.Parallel()
	f := newTurnFixture(t)
	dir := t.TempDir()
	f.acts.Pool = loginsOnly{login: agent.Login{Runtime: "demo", Name: "demo-a", ConfigDir: dir}}
	req := rw.RunTurnRequest{
		Session: rw.SessionSpec{ID: 7, Runtime: "demo"}, TurnID: "session-7/turn-1", Prompt: "@demo quota-wall 1h\nnever said",
		Workspace:        rw.Workspace{Workdir: t.TempDir(), StateDir: t.TempDir()},
		RuntimeSessionID: "4a0c8d55-1111-4222-8333-444455556666", Account: "demo-a",
	}
	before := time.Now()
	val, err := f.env.ExecuteActivity(rw.ActivityRunTurn, req)
	require.NoError(t, err)
	var result rw.TurnResult
	require.NoError(t, val.Get(&result))

	require.Equal(t, 1, result.ExitCode)
	require.NotNil(t, result.Wall, "the wall is reported apart from errors")
	require.Equal(t, "quota", result.Wall.Kind)
	require.True(t, result.Wall.ResetKnown)
	require.WithinDuration(t, before.Add(time.Hour), result.Wall.ResetAt, 5*time.Second)
	require.Contains(t, result.Wall.Message, "usage limit reached", "the CLI's own words, from its result line")
	require.FileExists(t, filepath.Join(dir, "login.json"), "the agent ran logged in as the account")

	req.TurnID, req.Account = "session-7/turn-2", "demo-z"
	_, err = f.env.ExecuteActivity(rw.ActivityRunTurn, req)
	require.ErrorContains(t, err, `has no demo account "demo-z" in its RUNNER_ACCOUNTS_FILE`)
}
