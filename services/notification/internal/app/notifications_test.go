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
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

var t0 = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

type testBundle struct {
	uc        app.Notifications
	repo      *apptest.Notifications
	sessions  *apptest.Sessions
	pusher    *apptest.Pusher
	debouncer *apptest.Debouncer
}

func setup(t *testing.T) testBundle {
	t.Helper()
	b := testBundle{repo: &apptest.Notifications{}, sessions: &apptest.Sessions{}, pusher: &apptest.Pusher{}, debouncer: &apptest.Debouncer{}}
	b.uc = app.NewNotifications(b.repo, b.sessions, b.pusher, b.debouncer, clock.NewStub(t0))
	return b
}

func TestFailurePushIsImmediateUnconditionalAndOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	optedOut := domain.Session{ID: 4, Title: "Port the parser", Status: "failed", PushNotifications: false}

	created, err := b.uc.Failure.Handle(ctx, "ev-1", t0, optedOut, "the agent exited with status 1")
	require.NoError(t, err)
	require.True(t, created)
	require.Len(t, b.pusher.Pushed(), 1, "pushed at once, opt-out or not")
	require.Equal(t, "Session 4 failed: Port the parser", b.pusher.Pushed()[0].Title)

	// Redelivered before the push reached a sink: pushed again (push/<id>
	// joins the running workflow); after it did: nothing more.
	created, err = b.uc.Failure.Handle(ctx, "ev-1", t0, optedOut, "the agent exited with status 1")
	require.NoError(t, err)
	require.False(t, created)
	require.Len(t, b.pusher.Pushed(), 2)
	_, first, err := b.uc.Pushed.Handle(ctx, b.pusher.Pushed()[0].ID)
	require.NoError(t, err)
	require.True(t, first)
	_, err = b.uc.Failure.Handle(ctx, "ev-1", t0, optedOut, "the agent exited with status 1")
	require.NoError(t, err)
	require.Len(t, b.pusher.Pushed(), 2, "a pushed notification is not pushed again")
	require.Len(t, b.repo.All(), 1)

	// A push that cannot start fails the effect, so lifecycle retries it.
	b.pusher.Fail(errors.New("temporal unavailable"))
	_, err = b.uc.Failure.Handle(ctx, "ev-2", t0, optedOut, "again")
	require.ErrorContains(t, err, "temporal unavailable")
	b.pusher.Fail(nil)
	created, err = b.uc.Failure.Handle(ctx, "ev-2", t0, optedOut, "again")
	require.NoError(t, err)
	require.False(t, created, "the notification was kept; its push now started")
	require.Len(t, b.pusher.Pushed(), 3)
}

func TestNeedsInputPausedOnlySignals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	paused := domain.Session{ID: 4, Status: "needs_input", NeedsInputCount: 9, PushNotifications: true}
	skipped, err := b.uc.Paused.Handle(context.Background(), paused, 9, t0)
	require.NoError(t, err)
	require.Empty(t, skipped)
	require.Equal(t, []apptest.Pause{{SessionID: 4, Marker: 9, At: t0}}, b.debouncer.Pauses())
	require.Empty(t, b.repo.All(), "nothing is recorded until the debounce ends")

	none := app.NewNotifications(b.repo, b.sessions, b.pusher, nil, clock.NewStub(t0))
	_, err = none.Paused.Handle(context.Background(), paused, 9, t0)
	require.ErrorIs(t, err, app.ErrNoDebounce)
}

// TestAPauseThatCannotBePushedStartsNoDebounce (issue 23 rule 7): the
// debounce only where a push could be sent — not for a session opted out,
// nor for one its pause put straight to sleep.
func TestAPauseThatCannotBePushedStartsNoDebounce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, s := range []domain.Session{
		{ID: 4, Status: "needs_input", NeedsInputCount: 9, PushNotifications: false},
		{ID: 5, Status: "waiting", NeedsInputCount: 9, PushNotifications: true},
	} {
		skipped, err := b.uc.Paused.Handle(context.Background(), s, 9, t0)
		require.NoError(t, err)
		require.Equal(t, domain.NeedsInputRefusal(s, 9), skipped)
	}
	require.Empty(t, b.debouncer.Pauses())
}

func TestRecordNeedsInputCreatesOncePerPause(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.sessions.Set(domain.Session{ID: 4, Title: "Fix it", Status: "needs_input", NeedsInputCount: 2, PushNotifications: true})
	out, err := b.uc.NeedsInput.Handle(ctx, 4, 2)
	require.NoError(t, err)
	require.True(t, out.Deliver)
	require.Equal(t, "Session 4 needs your input: Fix it", out.Notification.Title)
	require.Equal(t, t0, out.Notification.CreatedAt)
	again, err := b.uc.NeedsInput.Handle(ctx, 4, 2)
	require.NoError(t, err)
	require.Equal(t, out, again, "a retried check finds its notification, still to deliver")
	_, _, err = b.uc.Pushed.Handle(ctx, out.Notification.ID)
	require.NoError(t, err)
	again, err = b.uc.NeedsInput.Handle(ctx, 4, 2)
	require.NoError(t, err)
	require.False(t, again.Deliver, "and does not deliver it twice")
	require.Len(t, b.repo.All(), 1)
	require.Empty(t, b.pusher.Pushed(), "the debounce delivers it itself")

	b.sessions.Fail(errors.New("lifecycle unavailable"))
	_, err = b.uc.NeedsInput.Handle(ctx, 4, 2)
	require.ErrorContains(t, err, "lifecycle unavailable", "left for Temporal to retry")
}

func TestSendPushNotificationAttributesAndStartsThePush(t *testing.T) {
	t.Parallel()
	b := setup(t)
	asSession, asKey := principal.NewContext(context.Background(), principal.Principal{Kind: principal.Session, SessionID: 12}),
		principal.NewContext(context.Background(), principal.Principal{Kind: principal.Operator})

	n, err := b.uc.Send.Handle(asSession, domain.AgentMessage{SessionID: 5, Title: "Tests are green"})
	require.NoError(t, err)
	require.EqualValues(t, 12, n.SessionID, "a session credential's own session")
	n, err = b.uc.Send.Handle(asKey, domain.AgentMessage{SessionID: 5, Title: "Tests are green"})
	require.NoError(t, err)
	require.EqualValues(t, 5, n.SessionID, "a key's declared session")
	require.Len(t, b.pusher.Pushed(), 2)
	require.Equal(t, t0, n.CreatedAt)

	b.pusher.Fail(errors.New("temporal unavailable"))
	_, err = b.uc.Send.Handle(asKey, domain.AgentMessage{Title: "lost?"})
	require.ErrorContains(t, err, "temporal unavailable")
	require.Len(t, b.repo.All(), 2, "an unpushed message is not left in the inbox for the retry to double")

	_, err = b.uc.Send.Handle(asKey, domain.AgentMessage{})
	require.Error(t, err)
}

func TestInboxUseCasesValidateIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.uc.MarkRead.Handle(ctx, 0)
	require.ErrorContains(t, err, "notification_id")
	_, err = b.uc.Dismiss.Handle(ctx, -3)
	require.ErrorContains(t, err, "notification_id")
	_, err = b.uc.MarkAllRead.Handle(ctx, -1)
	require.ErrorContains(t, err, "session_id")
	_, err = b.uc.MarkRead.Handle(ctx, 77)
	require.ErrorIs(t, err, domain.ErrNotFound)
}
