package infer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
)

// fakeSessions is lifecycle as inference sees it.
type fakeSessions struct {
	pending  Request
	recorded []Inferred
	notes    map[string]string
	refuse   bool
}

func (f *fakeSessions) PendingInference(context.Context, int64) (Request, error) {
	return f.pending, nil
}

func (f *fakeSessions) RecordInference(_ context.Context, _ int64, in Inferred) (Recorded, error) {
	if f.refuse {
		return Recorded{}, ErrAnswerRefused
	}
	f.recorded = append(f.recorded, in)
	return Recorded{TitleSet: in.Title != "", CategorySet: in.CategoryID != nil}, nil
}

func (f *fakeSessions) Note(_ context.Context, _ int64, id, msg string, _ bool) error {
	if f.notes == nil {
		f.notes = map[string]string{}
	}
	f.notes[id] = msg
	return nil
}

type fakeTranscripts struct{ lines []transcript.Line }

func (f fakeTranscripts) LinesAfter(context.Context, int64, int64, int) ([]transcript.Line, error) {
	return f.lines, nil
}

// failing is an inferrer whose model never answers usefully.
type failing struct{ calls *int }

func (failing) Name() string { return "failing" }
func (f failing) Infer(context.Context, Request) (Answer, error) {
	*f.calls++
	return Answer{}, errors.New("model overloaded")
}

// fakeCosts keeps the cost entries recorded, each key once.
type fakeCosts struct {
	mu      sync.Mutex
	entries map[string]domain.CostEntry
}

func (f *fakeCosts) Record(_ context.Context, _ time.Time, entries ...domain.CostEntry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range entries {
		if _, ok := f.entries[e.Key]; !ok {
			f.entries[e.Key] = e
		}
	}
	return nil
}

type bundle struct {
	env      *testsuite.TestWorkflowEnvironment
	sessions *fakeSessions
	costs    *fakeCosts
}

func setup(t *testing.T, in Inferrer) bundle {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	sessions := &fakeSessions{pending: request()}
	sessions.pending.Runtime = "demo"
	inferrers, err := NewInferrers(ModeSession, "demo", map[string]Inferrer{"demo": in})
	require.NoError(t, err)
	costs := &fakeCosts{entries: map[string]domain.CostEntry{}}
	a := &Activities{Sessions: sessions, Inferrers: inferrers, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Costs: costs,
		Transcripts: fakeTranscripts{lines: []transcript.Line{{Kind: "assistant", Text: "Looking at the parser"}}}}
	env.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(a.Pending, activity.RegisterOptions{Name: ActivityPending})
	env.RegisterActivityWithOptions(a.Ask, activity.RegisterOptions{Name: ActivityAsk})
	env.RegisterActivityWithOptions(a.Record, activity.RegisterOptions{Name: ActivityRecord})
	env.RegisterActivityWithOptions(a.Note, activity.RegisterOptions{Name: ActivityNote})
	return bundle{env: env, sessions: sessions, costs: costs}
}

func (b bundle) run(t *testing.T) Result {
	t.Helper()
	b.env.ExecuteWorkflow(WorkflowName, Input{SessionID: 42})
	require.True(t, b.env.IsWorkflowCompleted())
	require.NoError(t, b.env.GetWorkflowError())
	var r Result
	require.NoError(t, b.env.GetWorkflowResult(&r))
	return r
}

func TestInferenceRecordsTheAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, Demo{})
	var asked Request
	b.env.OnActivity(ActivityAsk, mock.Anything, mock.Anything).Return(func(ctx context.Context, req Request) (Inferred, error) {
		asked = req
		a, _ := Demo{}.Infer(ctx, req)
		return Settle(req, a)
	})
	r := b.run(t)
	require.True(t, r.TitleSet)
	require.True(t, r.CategorySet)
	require.Len(t, b.sessions.recorded, 1)
	require.Equal(t, "Fix the flaky bugs in the parser", b.sessions.recorded[0].Title)
	require.Equal(t, int64(5), *b.sessions.recorded[0].CategoryID)
	require.Equal(t, "assistant: Looking at the parser\n", asked.TranscriptStart, "the model sees the transcript's start")
	require.Empty(t, b.sessions.notes)
}

// A model that fails its whole budget is noted once, and the run ends
// well: the session never waits on it.
func TestAFailedInferenceIsNotedOnce(t *testing.T) {
	t.Parallel()
	calls := 0
	b := setup(t, failing{calls: &calls})
	r := b.run(t)
	require.Equal(t, AskAttempts, calls, "the budget's attempts, no more")
	require.Contains(t, r.Failed, "could not infer the session's title and category in 3 attempts")
	require.Len(t, b.sessions.notes, 1)
	for _, msg := range b.sessions.notes {
		require.Contains(t, msg, "model overloaded")
		require.Contains(t, msg, "the session goes on without")
	}
	require.Empty(t, b.sessions.recorded)
	require.Len(t, b.costs.entries, AskAttempts, "each attempt asked the model: each is an inference cost")
	for _, e := range b.costs.entries {
		require.Equal(t, domain.CostInference, e.Kind)
		require.Equal(t, b.promptBytes(), e.Bytes)
	}
}

// The model call is inference's own cost: the prompt's bytes and what the
// runtime reported, on the session it named.
func TestInferenceCountsItsModelCall(t *testing.T) {
	t.Parallel()
	b := setup(t, reporting{})
	r := b.run(t)
	require.True(t, r.TitleSet)
	require.Len(t, b.costs.entries, 1)
	for _, e := range b.costs.entries {
		require.Equal(t, domain.CostEntry{Key: e.Key, SessionID: 42, Kind: domain.CostInference, Bytes: b.promptBytes(),
			Usage: domain.Usage{InputTokens: 9, OutputTokens: 3, CostUSD: 0.5}}, e)
	}
}

// promptBytes is the size of the prompt the model is sent.
func (b bundle) promptBytes() int64 {
	req := b.sessions.pending
	req.TranscriptStart = "assistant: Looking at the parser\n"
	return int64(len(Prompt(req)))
}

// reporting is the demo inferrer with a usage report.
type reporting struct{}

func (reporting) Name() string { return "reporting" }
func (reporting) Infer(ctx context.Context, req Request) (Answer, error) {
	a, err := Demo{}.Infer(ctx, req)
	a.Usage = &domain.Usage{InputTokens: 9, OutputTokens: 3, CostUSD: 0.5}
	return a, err
}

func TestNothingPendingAsksNoModel(t *testing.T) {
	t.Parallel()
	calls := 0
	b := setup(t, failing{calls: &calls})
	b.sessions.pending.Title, b.sessions.pending.Category = false, false
	r := b.run(t)
	require.NotEmpty(t, r.Skipped)
	require.Zero(t, calls)

	b = setup(t, failing{calls: &calls})
	b.sessions.pending.Runtime = "command"
	r = b.run(t)
	require.Contains(t, r.Skipped, "inference is off")
	require.Zero(t, calls)
}

func TestARefusedAnswerIsNotedNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, Demo{})
	b.sessions.refuse = true
	r := b.run(t)
	require.Contains(t, r.Failed, "lifecycle refused the inferred title and category")
	require.Len(t, b.sessions.notes, 1)
}
