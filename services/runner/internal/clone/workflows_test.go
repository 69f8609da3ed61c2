package clone_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/runner/internal/clone"
	"github.com/zimmerhq/zimmer/services/runner/internal/workspace"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slogx.Discard()))
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	clone.RegisterWorkflows(env)
	acts := &clone.Activities{}
	acts.RegisterShared(env)
	acts.RegisterNode(env)
	// Every env records the timeline notes its workflow writes (notesOf).
	var notes []clone.NoteRequest
	var mu sync.Mutex
	env.OnActivity(clone.ActivityNote, mock.Anything, mock.Anything).Return(
		func(_ context.Context, n clone.NoteRequest) error {
			mu.Lock()
			defer mu.Unlock()
			notes = append(notes, n)
			return nil
		}).Maybe()
	// And the trash deadlines it clears (clearedOf).
	var cleared []clone.ClearTrashRequest
	env.OnActivity(clone.ActivityClearTrashExpiry, mock.Anything, mock.Anything).Return(
		func(_ context.Context, r clone.ClearTrashRequest) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			cleared = append(cleared, r)
			return true, nil
		}).Maybe()
	envCleared.Store(env, func() []clone.ClearTrashRequest {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(cleared)
	})
	envNotes.Store(env, func() []clone.NoteRequest {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(notes)
	})
	return env
}

// envNotes maps an env to what reads its notes; envCleared to what reads
// the trash deadlines it cleared.
var envNotes, envCleared sync.Map

func clearedOf(env *testsuite.TestWorkflowEnvironment) []clone.ClearTrashRequest {
	read, _ := envCleared.Load(env)
	return read.(func() []clone.ClearTrashRequest)()
}

func notesOf(env *testsuite.TestWorkflowEnvironment) []clone.NoteRequest {
	read, _ := envNotes.Load(env)
	return read.(func() []clone.NoteRequest)()
}

// calls records when (in workflow time) and on which task queue each
// activity ran.
type calls struct {
	mu  sync.Mutex
	env *testsuite.TestWorkflowEnvironment
	log []call
}

type call struct {
	name, queue string
	at          time.Duration
}

func (c *calls) record(ctx context.Context, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, call{name: name, queue: activity.GetInfo(ctx).TaskQueue, at: c.env.Now().Sub(start)})
}

func (c *calls) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.log {
		out = append(out, l.name)
	}
	return out
}

func (c *calls) of(name string) call {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.log {
		if l.name == name {
			return l
		}
	}
	return call{}
}

func archived() clone.SessionState {
	at := start
	return clone.SessionState{Status: "archived", ArchivedAt: &at}
}

// TestCleanupWaitsTheUndoWindowThenPreservesOnTheClonesNode: nothing
// happens before the undo window ends; then the session is read again and
// the clone preserved on the queue of the node the workspaces table names.
func TestCleanupWaitsTheUndoWindowThenPreservesOnTheClonesNode(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	c := &calls{env: env}
	trash := start.Add(96 * time.Hour)
	env.OnActivity(clone.ActivitySessionState, mock.Anything, int64(7)).Return(
		func(ctx context.Context, _ int64) (clone.SessionState, error) {
			c.record(ctx, clone.ActivitySessionState)
			return archived(), nil
		})
	env.OnActivity(clone.ActivityLocate, mock.Anything, int64(7)).Return(
		func(ctx context.Context, _ int64) (clone.Location, error) {
			c.record(ctx, clone.ActivityLocate)
			return clone.Location{Found: true, Node: "b", State: workspace.Ready}, nil
		})
	env.OnActivity(clone.ActivityPreserve, mock.Anything, clone.PreserveRequest{SessionID: 7, TrashAfter: trash}).Return(
		func(ctx context.Context, _ clone.PreserveRequest) (clone.Report, error) {
			c.record(ctx, clone.ActivityPreserve)
			return clone.Report{Outcome: workspace.OutcomePreserved, State: workspace.Preserved, ArtifactsDir: "/p/7",
				Detail: "the clone's unpushed work is kept in /p/7"}, nil
		})

	var before []string
	env.RegisterDelayedCallback(func() { before = append([]string{"looked"}, c.names()...) }, 2*time.Minute-time.Second)

	env.ExecuteWorkflow(clone.CleanupWorkflowName, clone.CleanupInput{SessionID: 7, TrashAfter: trash, UndoWindow: 2 * time.Minute})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"looked"}, before, "nothing is touched inside the undo window")
	require.Equal(t, []string{clone.ActivitySessionState, clone.ActivityLocate, clone.ActivityPreserve}, c.names())
	require.Equal(t, 2*time.Minute, c.of(clone.ActivitySessionState).at)
	require.Equal(t, "zimmer-runner", c.of(clone.ActivityLocate).queue)
	require.Equal(t, "zimmer-runner-b", c.of(clone.ActivityPreserve).queue)
	var got clone.Report
	require.NoError(t, env.GetWorkflowResult(&got))
	require.Equal(t, workspace.OutcomePreserved, got.Outcome)
	require.Equal(t, "/p/7", got.ArtifactsDir)
	notes := notesOf(env)
	require.Len(t, notes, 1, "the timeline says what became of the clone")
	require.Equal(t, `[Clone] On runner node "b", the clone's unpushed work is kept in /p/7.`, notes[0].Message)
	require.False(t, notes[0].Warning)
	require.NotEmpty(t, notes[0].ID, "a retried note is written once")
}

// TestCleanupStandsDownForAnUnarchivedSession: an undo inside the window
// leaves the clone alone; nothing is located or preserved.
func TestCleanupStandsDownForAnUnarchivedSession(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.OnActivity(clone.ActivitySessionState, mock.Anything, int64(7)).Return(clone.SessionState{Status: "needs_input"}, nil).Once()

	env.ExecuteWorkflow(clone.CleanupWorkflowName, clone.CleanupInput{SessionID: 7, TrashAfter: start, UndoWindow: time.Minute})
	require.NoError(t, env.GetWorkflowError())
	var got clone.Report
	require.NoError(t, env.GetWorkflowResult(&got))
	require.Equal(t, workspace.OutcomeStoodDown, got.Outcome)
	env.AssertNotCalled(t, clone.ActivityLocate, mock.Anything, mock.Anything)
	env.AssertNotCalled(t, clone.ActivityPreserve, mock.Anything, mock.Anything)
	env.AssertExpectations(t)
}

func TestCleanupOfASessionWithoutAClone(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.OnActivity(clone.ActivitySessionState, mock.Anything, int64(7)).Return(archived(), nil).Once()
	env.OnActivity(clone.ActivityLocate, mock.Anything, int64(7)).Return(clone.Location{}, nil).Once()

	env.ExecuteWorkflow(clone.CleanupWorkflowName, clone.CleanupInput{SessionID: 7, TrashAfter: start})
	require.NoError(t, env.GetWorkflowError())
	var got clone.Report
	require.NoError(t, env.GetWorkflowResult(&got))
	require.Equal(t, workspace.OutcomeNoClone, got.Outcome)
	env.AssertNotCalled(t, clone.ActivityPreserve, mock.Anything, mock.Anything)
}

// TestCleanupRetriesTheNodeUntilItTakesTheWork: a node activity that fails
// (the disk busy, the node restarting) is tried again; a clone on another
// node than the one asked is not.
func TestCleanupRetriesTheNodeUntilItTakesTheWork(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.OnActivity(clone.ActivitySessionState, mock.Anything, int64(7)).Return(archived(), nil)
	env.OnActivity(clone.ActivityLocate, mock.Anything, int64(7)).Return(clone.Location{Found: true, Node: "a"}, nil)
	env.OnActivity(clone.ActivityPreserve, mock.Anything, mock.Anything).Return(clone.Report{}, errors.New("disk busy")).Once()
	env.OnActivity(clone.ActivityPreserve, mock.Anything, mock.Anything).Return(clone.Report{Outcome: workspace.OutcomeDeleted}, nil).Once()
	env.ExecuteWorkflow(clone.CleanupWorkflowName, clone.CleanupInput{SessionID: 7, TrashAfter: start})
	require.NoError(t, env.GetWorkflowError())
	env.AssertExpectations(t)

	env = newEnv(t)
	env.OnActivity(clone.ActivitySessionState, mock.Anything, int64(7)).Return(archived(), nil)
	env.OnActivity(clone.ActivityLocate, mock.Anything, int64(7)).Return(clone.Location{Found: true, Node: "a"}, nil)
	env.OnActivity(clone.ActivityPreserve, mock.Anything, mock.Anything).Return(clone.Report{},
		temporal.NewNonRetryableApplicationError("on node b", clone.ErrOtherNode, nil)).Once()
	env.ExecuteWorkflow(clone.CleanupWorkflowName, clone.CleanupInput{SessionID: 7, TrashAfter: start})
	require.ErrorContains(t, env.GetWorkflowError(), "on node b")
	env.AssertExpectations(t)
}

func TestRestoreRunsOnTheClonesNode(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	c := &calls{env: env}
	env.OnActivity(clone.ActivityLocate, mock.Anything, int64(7)).Return(clone.Location{Found: true, Node: "a", State: workspace.Preserved}, nil)
	env.OnActivity(clone.ActivityRestore, mock.Anything, int64(7)).Return(
		func(ctx context.Context, _ int64) (clone.Report, error) {
			c.record(ctx, clone.ActivityRestore)
			return clone.Report{Outcome: workspace.OutcomeRestored, State: workspace.Ready, Path: "/w/7"}, nil
		})
	env.ExecuteWorkflow(clone.RestoreWorkflowName, clone.RestoreInput{SessionID: 7})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, "zimmer-runner-a", c.of(clone.ActivityRestore).queue)
	require.Zero(t, c.of(clone.ActivityRestore).at, "a restore waits for nothing")
	var got clone.Report
	require.NoError(t, env.GetWorkflowResult(&got))
	require.Equal(t, "/w/7", got.Path)
}

// TestReaperReapsWhatIsDueOnEachNodeAndRunsTheBackstop: each due thing is
// reaped on its own node's queue; one failure does not stop the rest and
// is reported; then the stale-clone backstop runs.
func TestReaperReapsWhatIsDueOnEachNodeAndRunsTheBackstop(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	c := &calls{env: env}
	env.OnActivity(clone.ActivityTrashDue, mock.Anything, start, 200).Return(
		[]clone.Due{{SessionID: 1, Node: "a"}, {SessionID: 2, Node: "b"}, {SessionID: 3, Node: "a"}}, nil)
	env.OnActivity(clone.ActivityReap, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, req clone.ReapRequest) (clone.Report, error) {
			c.record(ctx, clone.ActivityReap+"/"+activity.GetInfo(ctx).TaskQueue)
			require.Equal(t, start, req.Now)
			if req.SessionID == 2 {
				return clone.Report{}, temporal.NewNonRetryableApplicationError("gone", clone.ErrOtherNode, nil)
			}
			return clone.Report{Outcome: workspace.OutcomeReaped}, nil
		})
	env.OnActivity(clone.ActivityStaleClones, mock.Anything, start).Return(4, nil).Once()
	env.OnActivity(clone.ActivitySessionState, mock.Anything, mock.Anything).Return(archived(), nil)

	env.ExecuteWorkflow(clone.ReaperWorkflowName)
	require.NoError(t, env.GetWorkflowError())
	var got clone.ReaperResult
	require.NoError(t, env.GetWorkflowResult(&got))
	require.Equal(t, clone.ReaperResult{Reaped: 2, Failed: []int64{2}, CleanupsStarted: 4}, got)
	require.ElementsMatch(t, []string{
		clone.ActivityReap + "/zimmer-runner-a", clone.ActivityReap + "/zimmer-runner-b", clone.ActivityReap + "/zimmer-runner-a",
	}, c.names())
	env.AssertExpectations(t)
}

// TestReaperClearsTheTrashDeadlineOfWhatItReaped (issue 23): what the
// reaper deletes at the deadline was all the trash held of the session, so
// lifecycle is told to drop that archive's trash_after — only for a
// reaping, and only while the session's deadline is the one that passed.
func TestReaperClearsTheTrashDeadlineOfWhatItReaped(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	passed, ahead := start.Add(-time.Minute), start.Add(time.Hour)
	state := func(trashAfter time.Time) clone.SessionState {
		s := archived()
		s.TrashAfter = &trashAfter
		return s
	}
	env.OnActivity(clone.ActivityTrashDue, mock.Anything, start, 200).Return(
		[]clone.Due{{SessionID: 1, Node: "a"}, {SessionID: 2, Node: "a"}, {SessionID: 3, Node: "a"}}, nil)
	env.OnActivity(clone.ActivityReap, mock.Anything, mock.Anything).Return(
		func(_ context.Context, req clone.ReapRequest) (clone.Report, error) {
			if req.SessionID == 3 {
				return clone.Report{Outcome: workspace.OutcomeUnchanged}, nil // unarchived meanwhile, say
			}
			return clone.Report{Outcome: workspace.OutcomeReaped}, nil
		})
	env.OnActivity(clone.ActivitySessionState, mock.Anything, int64(1)).Return(state(passed), nil).Once()
	// Archived again since: its own, later deadline is not the reaping's.
	env.OnActivity(clone.ActivitySessionState, mock.Anything, int64(2)).Return(state(ahead), nil).Once()
	env.OnActivity(clone.ActivityStaleClones, mock.Anything, start).Return(0, nil).Once()

	env.ExecuteWorkflow(clone.ReaperWorkflowName)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []clone.ClearTrashRequest{{SessionID: 1, ArchivedAt: start}}, clearedOf(env))
	env.AssertExpectations(t)
}

// TestCleanupKeepsUntilTheSessionsOwnDeadline: a run that serves a second
// archive inside its undo window keeps what it keeps until the deadline
// the session holds now, not the first archive's.
func TestCleanupKeepsUntilTheSessionsOwnDeadline(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	later := start.Add(100 * time.Hour)
	s := archived()
	s.TrashAfter = &later
	env.OnActivity(clone.ActivitySessionState, mock.Anything, int64(7)).Return(s, nil)
	env.OnActivity(clone.ActivityLocate, mock.Anything, int64(7)).Return(clone.Location{Found: true, Node: "a"}, nil)
	env.OnActivity(clone.ActivityPreserve, mock.Anything, clone.PreserveRequest{SessionID: 7, TrashAfter: later}).
		Return(clone.Report{Outcome: workspace.OutcomePreserved}, nil).Once()
	env.ExecuteWorkflow(clone.CleanupWorkflowName, clone.CleanupInput{SessionID: 7, TrashAfter: start.Add(96 * time.Hour), UndoWindow: time.Minute})
	require.NoError(t, env.GetWorkflowError())
	env.AssertExpectations(t)
}

// TestCleanupClearsTheTrashDeadlineOnlyWhenNothingIsRetained (issue 23 rule
// 17): a clean clone deleted, or none at all, leaves nothing in the trash,
// so lifecycle is told to drop the archive's trash_after; preserved work
// keeps it.
func TestCleanupClearsTheTrashDeadlineOnlyWhenNothingIsRetained(t *testing.T) {
	t.Parallel()
	trash := start.Add(96 * time.Hour)
	session := archived()
	session.TrashAfter = &trash
	for _, tc := range []struct {
		outcome workspace.Outcome
		found   bool
		clears  bool
	}{
		{workspace.OutcomeDeleted, true, true},
		{workspace.OutcomeVanished, true, true},
		{workspace.OutcomeNoClone, false, true},
		{workspace.OutcomePreserved, true, false},
		{workspace.OutcomeMangled, true, false},
		{workspace.OutcomeExtractionFailed, true, false},
	} {
		t.Run(string(tc.outcome), func(t *testing.T) {
			t.Parallel()
			env := newEnv(t)
			env.OnActivity(clone.ActivitySessionState, mock.Anything, int64(7)).Return(session, nil)
			env.OnActivity(clone.ActivityLocate, mock.Anything, int64(7)).Return(clone.Location{Found: tc.found, Node: "a"}, nil)
			env.OnActivity(clone.ActivityPreserve, mock.Anything, mock.Anything).Return(
				clone.Report{Outcome: tc.outcome, Detail: string(tc.outcome)}, nil).Maybe()

			env.ExecuteWorkflow(clone.CleanupWorkflowName, clone.CleanupInput{SessionID: 7, TrashAfter: trash})
			require.NoError(t, env.GetWorkflowError())
			if !tc.clears {
				require.Empty(t, clearedOf(env), "something is kept until the deadline")
				return
			}
			require.Equal(t, []clone.ClearTrashRequest{{SessionID: 7, ArchivedAt: start}}, clearedOf(env))
		})
	}
}
