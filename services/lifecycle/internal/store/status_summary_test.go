package store_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// TestOneStatusSummaryForkAtWorkPerSource: concurrent refreshes of one
// session create one fork between them (the unique index), the others are
// answered with it; its harvest writes the summary on the source once,
// archives the fork as Zimmer's clean-up, and frees the source for the
// next fork.
func TestOneStatusSummaryForkAtWorkPerSource(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	src, err := b.sessions.Create.Handle(ctx, domain.NewSession{Prompt: "work", GitRoot: "g", Goal: "open a PR", Branch: "main"})
	require.NoError(t, err)

	const racers = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[int64]int{}
		created int
	)
	for range racers {
		wg.Go(func() {
			fork, isNew, err := b.sessions.Fork.Handle(ctx, src.ID, "summarise", 40)
			if !assertNoError(t, err) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[fork.ID]++
			if isNew {
				created++
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, created, "one fork created")
	require.Len(t, ids, 1, "every refresh answered with the same fork")
	var forkID int64
	for id := range ids {
		forkID = id
	}
	fork, err := b.sessions.Get.Handle(ctx, strconv.FormatInt(forkID, 10))
	require.NoError(t, err)
	require.True(t, fork.IsStatusSummaryFork())
	require.Empty(t, fork.Goal)
	require.Nil(t, fork.ParentSessionID)
	require.Equal(t, "main", fork.Branch)
	of, ok := fork.ForkOf()
	require.True(t, ok, "the markers read back from the column: %v", fork.CustomMetadata)
	require.Equal(t, domain.StatusSummaryFork{SourceID: src.ID, Covers: 40}, of)

	_, _, err = b.sessions.Fork.Handle(ctx, fork.ID, "summarise", 1)
	require.ErrorIs(t, err, domain.ErrPrecondition, "a fork is never summarised")

	// The fork's one turn: start, pause.
	for _, e := range []string{"start", "pause"} {
		_, err = b.sessions.Transition.Fire(ctx, strconv.FormatInt(fork.ID, 10), e, domain.Command{RunningJobID: "j"})
		require.NoError(t, err)
	}
	// A message queued for the fork: the guarded archive refuses, the
	// harvest's system archive does not ask the queue.
	b.sessions.Transition.Queue = refusingQueue{}
	_, err = b.sessions.Transition.Handle(ctx, strconv.FormatInt(fork.ID, 10), "archive", domain.Command{})
	require.ErrorIs(t, err, domain.ErrPrecondition, "the guard refuses a caller's archive")

	h, err := b.sessions.Harvest.Handle(ctx, fork.ID, "Tests pass; the PR is next.", "")
	require.NoError(t, err)
	require.True(t, h.Harvested)
	require.Equal(t, "Tests pass; the PR is next.", h.Source.Markers.StatusSummary.Text)
	require.Equal(t, int64(40), h.Source.Markers.StatusSummary.TranscriptPosition)
	require.Equal(t, domain.StatusArchived, h.Fork.Status)

	got, err := b.sessions.Get.Handle(ctx, strconv.FormatInt(src.ID, 10))
	require.NoError(t, err)
	require.Equal(t, h.Source.Markers.StatusSummary, got.Markers.StatusSummary, "the summary reads back as written")
	require.Equal(t, src.Status, got.Status, "a summary moves nothing")
	lines, err := b.sessions.History.Timeline(ctx, strconv.FormatInt(fork.ID, 10))
	require.NoError(t, err)
	require.Contains(t, lines[len(lines)-1].Message, "Session moved to trash by Zimmer's status-summary fork clean-up")

	again, err := b.sessions.Harvest.Handle(ctx, fork.ID, "other", "")
	require.NoError(t, err)
	require.False(t, again.Harvested, "a retried harvest writes nothing")
	require.Equal(t, "Tests pass; the PR is next.", again.Source.Markers.StatusSummary.Text)

	next, isNew, err := b.sessions.Fork.Handle(ctx, src.ID, "summarise", 90)
	require.NoError(t, err)
	require.True(t, isNew, "an archived fork frees its source")
	require.NotEqual(t, fork.ID, next.ID)

	_, err = b.sessions.Harvest.Handle(ctx, src.ID, "x", "")
	require.ErrorIs(t, err, domain.ErrPrecondition, "a session that is no fork has nothing to harvest")
	require.ErrorContains(t, err, rules.StatusSummaryForkKey)
}

// assertNoError is require.NoError for a goroutine: it reports and says
// whether to go on.
func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}

// refusingQueue is a queue holding a message for every session: its guard
// refuses every archive that is not forced.
type refusingQueue struct{}

func (refusingQueue) SealQueue(context.Context, int64, string, bool) (app.QueueSeal, error) {
	return app.QueueSeal{Refusal: "1 message is queued for this session"}, nil
}

func (refusingQueue) UnsealQueue(context.Context, int64, string) error { return nil }
