package summary_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
	"github.com/zimmerhq/zimmer/services/runner/internal/summary"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
)

type fork struct {
	source, covers int64
	prompt         string
}

type harvest struct {
	fork          int64
	text, failure string
}

type fakeLifecycle struct {
	sources    map[int64]summary.Source
	forks      []fork
	harvests   []harvest
	harvestErr error
}

func (f *fakeLifecycle) SummarySource(_ context.Context, id int64) (summary.Source, error) {
	src, ok := f.sources[id]
	if !ok {
		return summary.Source{Gone: true}, nil
	}
	return src, nil
}

func (f *fakeLifecycle) CreateFork(_ context.Context, sourceID int64, prompt string, covers int64) (int64, bool, error) {
	f.forks = append(f.forks, fork{source: sourceID, covers: covers, prompt: prompt})
	return 100 + int64(len(f.forks)), true, nil
}

func (f *fakeLifecycle) HarvestFork(_ context.Context, forkID int64, text, failure string) error {
	f.harvests = append(f.harvests, harvest{fork: forkID, text: text, failure: failure})
	return f.harvestErr
}

type fakeTranscripts map[int64][]transcript.Line

func (f fakeTranscripts) Tail(_ context.Context, id, upTo int64, limit int) ([]transcript.Line, error) {
	lines := f[id]
	if len(lines) > limit {
		lines = lines[len(lines)-limit:]
	}
	return lines, nil
}

func TestARefreshForksOnlyWhenTheTranscriptMoved(t *testing.T) {
	t.Parallel()
	lc := &fakeLifecycle{sources: map[int64]summary.Source{
		7: {Covered: 0}, 8: {Covered: 31}, 9: {IsFork: true}, 10: {Archived: true}, 11: {},
	}}
	tr := fakeTranscripts{
		7: {{ID: 30, Kind: "assistant", Text: "I fixed the bug."}, {ID: 31, Kind: "result", Text: "I fixed the bug."}},
		8: {{ID: 31, Kind: "result", Text: "done"}},
		9: {{ID: 50, Kind: "result", Text: "a summary"}},
	}
	a := &summary.Activities{Lifecycle: lc, Transcripts: tr}

	got, err := a.Fork(t.Context(), 7)
	require.NoError(t, err)
	require.Equal(t, summary.Refreshed{ForkID: 101, Created: true}, got)
	require.Len(t, lc.forks, 1)
	require.Equal(t, int64(31), lc.forks[0].covers, "the fork covers the newest line")
	req, ok := domain.ParseSummaryPrompt(lc.forks[0].prompt)
	require.True(t, ok)
	require.Equal(t, []string{"[assistant] I fixed the bug.", "[result] I fixed the bug."}, req.Lines)

	for id, why := range map[int64]string{8: "no transcript since", 9: "never summarised", 10: "archived", 11: "no transcript since", 12: "gone"} {
		got, err := a.Fork(t.Context(), id)
		require.NoError(t, err)
		require.Contains(t, got.Skipped, why, "session %d", id)
	}
	require.Len(t, lc.forks, 1, "nothing else forked")
}

func TestAHarvestHandsOverWhatTheForkWroteOrWhyItFailed(t *testing.T) {
	t.Parallel()
	lc := &fakeLifecycle{}
	tr := fakeTranscripts{101: {{ID: 60, Kind: "assistant", Text: "Draft."}, {ID: 61, Kind: "result", Text: "Session #7 is done."}}}
	a := &summary.Activities{Lifecycle: lc, Transcripts: tr}

	require.NoError(t, a.HarvestFork(t.Context(), summary.HarvestInput{ForkID: 101}))
	require.NoError(t, a.HarvestFork(t.Context(), summary.HarvestInput{ForkID: 102, Failed: true, FailureReason: "exited with code 1"}))
	require.NoError(t, a.HarvestFork(t.Context(), summary.HarvestInput{ForkID: 103}))
	require.Equal(t, []harvest{
		{fork: 101, text: "Session #7 is done."},
		{fork: 102, failure: "exited with code 1"},
		{fork: 103}, // wrote nothing: lifecycle records that as the failure
	}, lc.harvests)

	lc.harvestErr = &summary.NotAForkError{Message: "session 5 is not a status-summary fork"}
	err := a.HarvestFork(t.Context(), summary.HarvestInput{ForkID: 5})
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app))
	require.True(t, app.NonRetryable(), "lifecycle's refusal is not retried")
}

func TestTheWorkflowsRunTheirActivity(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	lc := &fakeLifecycle{sources: map[int64]summary.Source{7: {}}}
	a := &summary.Activities{Lifecycle: lc, Transcripts: fakeTranscripts{7: {{ID: 3, Kind: "result", Text: "x"}}}}
	a.Register(env)
	env.ExecuteWorkflow(summary.RefreshWorkflowName, summary.RefreshInput{SourceID: 7})
	require.NoError(t, env.GetWorkflowError())
	var got summary.Refreshed
	require.NoError(t, env.GetWorkflowResult(&got))
	require.True(t, got.Created)

	env = suite.NewTestWorkflowEnvironment()
	a.Register(env)
	env.ExecuteWorkflow(summary.HarvestWorkflowName, summary.HarvestInput{ForkID: 101, Failed: true, FailureReason: "boom"})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, harvest{fork: 101, failure: "boom"}, lc.harvests[0])
}
