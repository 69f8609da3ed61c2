package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/app/apptest"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// What the raise, the failure and the agent's message could not start, the
// re-drive starts, once; what started is left alone.
func TestRedriveStartsWhatNeverStartedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewStub(t0)
	alertRepo, pager := &apptest.Alerts{}, &apptest.Pager{}
	alerts := app.NewAlerts(alertRepo, pager, clk, time.Hour)
	b := setup(t)
	b.uc = app.NewNotifications(b.repo, b.sessions, b.pusher, b.debouncer, clk)
	redrive := app.NewRedrive(alertRepo, b.repo, pager, b.pusher, clk)

	// Temporal is away: the raise pages no one (yet) but answers paged; the
	// failure's effect fails; the agent's message is refused and removed.
	pager.Fail(errors.New("temporal unavailable"))
	b.pusher.Fail(errors.New("temporal unavailable"))
	lost, paged, err := alerts.Raise.Handle(ctx, domain.Raise{DedupKey: "relay", Summary: "relay is stuck"})
	require.NoError(t, err)
	require.True(t, paged)
	_, err = b.uc.Failure.Handle(ctx, "ev-1", t0, domain.Session{ID: 4, Status: "failed"}, "boom")
	require.ErrorContains(t, err, "temporal unavailable")
	_, err = b.uc.Send.Handle(ctx, domain.AgentMessage{Title: "refused"})
	require.Error(t, err)

	// Back: what starts now is recorded started.
	pager.Fail(nil)
	b.pusher.Fail(nil)
	started, _, err := alerts.Raise.Handle(ctx, domain.Raise{DedupKey: "other", Summary: "paged at once"})
	require.NoError(t, err)
	sent, err := b.uc.Send.Handle(ctx, domain.AgentMessage{Title: "sent"})
	require.NoError(t, err)
	require.Equal(t, []domain.Alert{started}, pager.Pages())
	require.Equal(t, []int64{sent.ID}, ids(b.pusher.Pushed()))

	// Not yet a minute old: a start may still be on its way.
	n, err := redrive.Handle(ctx, t0)
	require.NoError(t, err)
	require.Zero(t, n)

	clk.Set(t0.Add(2 * time.Minute))
	n, err = redrive.Handle(ctx, clk.Now().Add(-app.RedriveAfter))
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "the lost page and the failure's push")
	require.Equal(t, []domain.Alert{started, lost}, pager.Pages())
	failure := b.repo.All()[0]
	require.Equal(t, domain.TypeFailure, failure.Type)
	require.Equal(t, []int64{sent.ID, failure.ID}, ids(b.pusher.Pushed()))

	n, err = redrive.Handle(ctx, clk.Now())
	require.NoError(t, err)
	require.Zero(t, n, "each is started once")
	require.Len(t, pager.Pages(), 2)
	require.Len(t, b.pusher.Pushed(), 2)
}

// A start that fails again is left to the next run, named in the error;
// the others still start.
func TestRedriveLeavesWhatStillCannotStartToTheNextRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewStub(t0)
	alertRepo, pager := &apptest.Alerts{}, &apptest.Pager{}
	pager.Fail(errors.New("temporal unavailable"))
	alerts := app.NewAlerts(alertRepo, pager, clk, time.Hour)
	_, _, err := alerts.Raise.Handle(ctx, domain.Raise{DedupKey: "relay", Summary: "relay is stuck"})
	require.NoError(t, err)
	repo, pusher := &apptest.Notifications{}, &apptest.Pusher{}
	_, _, err = repo.Create(ctx, domain.AgentMessage{Title: "stored, never started"}.Notification(t0))
	require.NoError(t, err)
	redrive := app.NewRedrive(alertRepo, repo, pager, pusher, clk)

	n, err := redrive.Handle(ctx, t0.Add(time.Minute))
	require.ErrorContains(t, err, "re-drive the page of alert 1: temporal unavailable")
	require.EqualValues(t, 1, n, "the push started all the same")
	require.Len(t, pusher.Pushed(), 1)

	pager.Fail(nil)
	n, err = redrive.Handle(ctx, t0.Add(time.Minute))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Len(t, pager.Pages(), 1)
}

func ids(ns []domain.Notification) []int64 {
	out := make([]int64, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}
