package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/app/apptest"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
)

// forEachNotificationRepository runs test as a parallel subtest against
// each NotificationRepository, empty: the in-memory fake the app and
// workflow tests use, and Postgres.
func forEachNotificationRepository(t *testing.T, test func(t *testing.T, repo app.NotificationRepository)) {
	t.Helper()
	t.Run("fake", func(t *testing.T) {
		t.Parallel()
		test(t, &apptest.Notifications{})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, store.NewNotifications(pgtest.DB(t, inbox.Migrations, store.Migrations)))
	})
}

func needsInput(session, marker int64, at time.Time) domain.Notification {
	return domain.NeedsInput(domain.Session{ID: session, Title: "a task"}, marker, at)
}

func create(t *testing.T, repo app.NotificationRepository, n domain.Notification) domain.Notification {
	t.Helper()
	got, created, err := repo.Create(context.Background(), n)
	require.NoError(t, err)
	require.True(t, created, "a new notification")
	return got
}

func TestCreateMakesOnePerPauseAndPerDedupKey(t *testing.T) {
	t.Parallel()
	forEachNotificationRepository(t, func(t *testing.T, repo app.NotificationRepository) {
		ctx := context.Background()
		first := create(t, repo, needsInput(7, 3, t0))
		require.Positive(t, first.ID)
		require.Equal(t, "Session 7 needs your input: a task", first.Title)
		require.Equal(t, t0, first.CreatedAt)
		require.Nil(t, first.ReadAt)

		again, created, err := repo.Create(ctx, needsInput(7, 3, t0.Add(time.Minute)))
		require.NoError(t, err)
		require.False(t, created, "a redelivered pause creates nothing")
		require.Equal(t, first, again)

		create(t, repo, needsInput(7, 4, t0)) // the next pause
		create(t, repo, needsInput(8, 3, t0)) // another session's

		failure := create(t, repo, domain.Failure(domain.Session{ID: 7}, "boom", "ev-1", t0))
		dup, created, err := repo.Create(ctx, domain.Failure(domain.Session{ID: 7}, "boom", "ev-1", t0.Add(time.Second)))
		require.NoError(t, err)
		require.False(t, created, "a redelivered failure effect creates nothing")
		require.Equal(t, failure.ID, dup.ID)

		msg := domain.AgentMessage{Title: "hello"}.Notification(t0)
		a := create(t, repo, msg)
		b := create(t, repo, msg)
		require.NotEqual(t, a.ID, b.ID, "agent messages carry no key: each send is one")
		require.Zero(t, a.SessionID, "about no session")

		require.NoError(t, repo.Delete(ctx, b.ID))
		require.NoError(t, repo.Delete(ctx, b.ID), "deleting what is gone is no error")
		_, err = repo.MarkRead(ctx, b.ID, t0)
		require.ErrorIs(t, err, domain.ErrNotFound)
	})
}

// Concurrent creators of one pause's notification (a retried activity
// racing its first attempt) get one row.
func TestConcurrentCreatesOfOnePause(t *testing.T) {
	t.Parallel()
	forEachNotificationRepository(t, func(t *testing.T, repo app.NotificationRepository) {
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			ids     = map[int64]bool{}
			created int
		)
		for range 8 {
			wg.Go(func() {
				n, c, err := repo.Create(context.Background(), needsInput(9, 1, t0))
				require.NoError(t, err)
				mu.Lock()
				defer mu.Unlock()
				ids[n.ID] = true
				if c {
					created++
				}
			})
		}
		wg.Wait()
		require.Len(t, ids, 1)
		require.Equal(t, 1, created)
	})
}

func TestListFiltersPagesAndCounts(t *testing.T) {
	t.Parallel()
	forEachNotificationRepository(t, func(t *testing.T, repo app.NotificationRepository) {
		ctx := context.Background()
		list := app.ListNotifications{Repo: repo}
		a := create(t, repo, needsInput(1, 1, t0))                                 // read below
		b := create(t, repo, domain.Failure(domain.Session{ID: 1}, "x", "e1", t0)) // dismissed below
		c := create(t, repo, needsInput(2, 1, t0))
		d := create(t, repo, domain.AgentMessage{SessionID: 2, Title: "hi"}.Notification(t0))
		e := create(t, repo, domain.AgentMessage{Title: "from a program"}.Notification(t0))
		f := create(t, repo, domain.Failure(domain.Session{ID: 2}, "y", "e2", t0.Add(time.Hour)))
		_, err := repo.MarkRead(ctx, a.ID, t0)
		require.NoError(t, err)
		_, err = repo.Dismiss(ctx, b.ID, t0)
		require.NoError(t, err)

		ids := func(page domain.Page) []int64 {
			var out []int64
			for _, n := range page.Notifications {
				out = append(out, n.ID)
			}
			return out
		}
		get := func(unread bool, typ string, session int64, dismissed bool) domain.Page {
			filter, err := domain.NewFilter(unread, typ, session, dismissed, 0, "")
			require.NoError(t, err)
			page, err := list.Handle(ctx, filter)
			require.NoError(t, err)
			require.Empty(t, page.NextPageToken, "one page holds them all")
			return page
		}
		all := get(false, "", 0, false)
		require.Equal(t, []int64{f.ID, e.ID, d.ID, c.ID, a.ID}, ids(all), "newest first, the dismissed one hidden")
		require.Equal(t, 4, all.UnreadCount)
		require.Equal(t, []int64{f.ID, e.ID, d.ID, c.ID, b.ID, a.ID}, ids(get(false, "", 0, true)))
		require.Equal(t, []int64{f.ID, e.ID, d.ID, c.ID}, ids(get(true, "", 0, false)))
		require.Equal(t, []int64{f.ID}, ids(get(false, "failure", 0, false)))
		require.Equal(t, []int64{f.ID, b.ID}, ids(get(false, "failure", 0, true)))
		session1 := get(false, "", 1, true)
		require.Equal(t, []int64{b.ID, a.ID}, ids(session1))
		require.Zero(t, session1.UnreadCount, "read and dismissed are not unread")
		session2 := get(false, "needs_input", 2, false)
		require.Equal(t, []int64{c.ID}, ids(session2))
		require.Equal(t, 1, session2.UnreadCount, "the count follows the type and session")

		// Paging two at a time walks the same list.
		var walked []int64
		token := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 5, "paging ends")
			filter, err := domain.NewFilter(false, "", 0, true, 2, token)
			require.NoError(t, err)
			page, err := list.Handle(ctx, filter)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page.Notifications), 2)
			walked = append(walked, ids(page)...)
			if token = page.NextPageToken; token == "" {
				break
			}
		}
		require.Equal(t, []int64{f.ID, e.ID, d.ID, c.ID, b.ID, a.ID}, walked)
	})
}

func TestReadDismissAndReadAll(t *testing.T) {
	t.Parallel()
	forEachNotificationRepository(t, func(t *testing.T, repo app.NotificationRepository) {
		ctx := context.Background()
		a := create(t, repo, needsInput(1, 1, t0))
		b := create(t, repo, needsInput(1, 2, t0))
		c := create(t, repo, needsInput(2, 1, t0))
		d := create(t, repo, needsInput(3, 1, t0))

		read, err := repo.MarkRead(ctx, a.ID, t0.Add(time.Minute))
		require.NoError(t, err)
		require.Equal(t, t0.Add(time.Minute), *read.ReadAt)
		again, err := repo.MarkRead(ctx, a.ID, t0.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, t0.Add(time.Minute), *again.ReadAt, "reading again keeps the first time")

		dismissed, err := repo.Dismiss(ctx, d.ID, t0.Add(time.Minute))
		require.NoError(t, err)
		require.Equal(t, t0.Add(time.Minute), *dismissed.DismissedAt)
		dismissed, err = repo.Dismiss(ctx, d.ID, t0.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, t0.Add(time.Minute), *dismissed.DismissedAt)
		_, err = repo.Dismiss(ctx, 999_999, t0)
		require.ErrorIs(t, err, domain.ErrNotFound)

		marked, err := repo.MarkAllRead(ctx, 1, t0.Add(2*time.Minute))
		require.NoError(t, err)
		require.Equal(t, 1, marked, "session 1's one unread")
		marked, err = repo.MarkAllRead(ctx, 0, t0.Add(3*time.Minute))
		require.NoError(t, err)
		require.Equal(t, 1, marked, "session 2's; session 3's is dismissed")
		rows, unread, err := repo.List(ctx, domain.Filter{Limit: 10, IncludeDismissed: true})
		require.NoError(t, err)
		require.Zero(t, unread)
		byID := map[int64]domain.Notification{}
		for _, n := range rows {
			byID[n.ID] = n
		}
		require.Equal(t, t0.Add(2*time.Minute), *byID[b.ID].ReadAt)
		require.Equal(t, t0.Add(3*time.Minute), *byID[c.ID].ReadAt)
		require.Nil(t, byID[d.ID].ReadAt, "dismissed, not read")

		created, err := repo.MarkPushed(ctx, c.ID, t0.Add(time.Second))
		require.NoError(t, err)
		require.False(t, created.IsZero(), "the first mark returns the creation, to time the push")
		created, err = repo.MarkPushed(ctx, c.ID, t0.Add(time.Hour))
		require.NoError(t, err)
		require.True(t, created.IsZero(), "a second mark changes nothing and times nothing")
		rows, _, err = repo.List(ctx, domain.Filter{Limit: 10, SessionID: 2})
		require.NoError(t, err)
		require.Equal(t, t0.Add(time.Second), *rows[0].PushedAt, "the first delivery's time")
	})
}

func TestStaleAndDismissApplyEachEventOnce(t *testing.T) {
	t.Parallel()
	forEachNotificationRepository(t, func(t *testing.T, repo app.NotificationRepository) {
		ctx := context.Background()
		p1 := create(t, repo, needsInput(1, 1, t0))
		p2 := create(t, repo, needsInput(1, 2, t0))
		read := create(t, repo, needsInput(1, 3, t0))
		_, err := repo.MarkRead(ctx, read.ID, t0)
		require.NoError(t, err)
		failure := create(t, repo, domain.Failure(domain.Session{ID: 1}, "x", "f1", t0))
		// A failure before the resume whose effect arrived after it: its
		// notification is created late, and is about the failure all the same.
		late := domain.Failure(domain.Session{ID: 1}, "y", "f0", t0.Add(2*time.Minute))
		late.OccurredAt = t0
		lateFailure := create(t, repo, late)
		other := create(t, repo, needsInput(2, 1, t0))
		otherFailure := create(t, repo, domain.Failure(domain.Session{ID: 2}, "x", "f2", t0))

		resume := uuid.NewString()
		stale := domain.StaleOnResume{SessionID: 1, NeedsInputCount: 3, ResumedAt: t0.Add(30 * time.Second)}
		applied, err := repo.MarkStale(ctx, resume, stale, t0.Add(time.Minute))
		require.NoError(t, err)
		require.True(t, applied)

		// The session pauses again, and fails; a late redelivery of the
		// resume's effect must not stale the new pause's or failure's news.
		p4 := create(t, repo, needsInput(1, 4, t0.Add(2*time.Minute)))
		laterFailure := create(t, repo, domain.Failure(domain.Session{ID: 1}, "z", "f3", t0.Add(2*time.Minute)))
		applied, err = repo.MarkStale(ctx, resume, stale, t0.Add(3*time.Minute))
		require.NoError(t, err)
		require.False(t, applied, "a redelivery is recognised")
		applied, err = repo.MarkStale(ctx, uuid.NewString(), stale, t0.Add(3*time.Minute))
		require.NoError(t, err)
		require.True(t, applied, "and even a reordered resume stales only what happened before it")

		state := func() map[int64]domain.Notification {
			rows, _, err := repo.List(ctx, domain.Filter{Limit: 50, IncludeDismissed: true})
			require.NoError(t, err)
			out := map[int64]domain.Notification{}
			for _, n := range rows {
				out[n.ID] = n
			}
			return out
		}
		s := state()
		for _, id := range []int64{p1.ID, p2.ID, read.ID, failure.ID, lateFailure.ID} {
			require.NotNil(t, s[id].StaleAt, "notification %d: every active one of the session, read and failures included", id)
			require.Equal(t, t0.Add(time.Minute), *s[id].StaleAt, "notification %d", id)
		}
		require.Nil(t, s[other.ID].StaleAt, "another session's")
		require.Nil(t, s[otherFailure.ID].StaleAt, "another session's failure")
		require.Nil(t, s[p4.ID].StaleAt, "the later pause's")
		require.Nil(t, s[laterFailure.ID].StaleAt, "the later failure's")

		archive := uuid.NewString()
		applied, err = repo.DismissSession(ctx, archive, 1, t0.Add(90*time.Second), t0.Add(5*time.Minute))
		require.NoError(t, err)
		require.True(t, applied)
		applied, err = repo.DismissSession(ctx, archive, 1, t0.Add(time.Hour), t0.Add(6*time.Minute))
		require.NoError(t, err)
		require.False(t, applied)
		s = state()
		for _, id := range []int64{p1.ID, p2.ID, read.ID, failure.ID} {
			require.Equal(t, t0.Add(5*time.Minute), *s[id].DismissedAt, "notification %d", id)
		}
		require.Nil(t, s[p4.ID].DismissedAt, "created after the archive: not the archive's to dismiss")
		require.Nil(t, s[other.ID].DismissedAt)
	})
}

// The re-drive's view: a failure or agent's message whose push never
// started and never reached a sink is found once older than the cutoff,
// oldest first and bounded; a needs_input notification (its debounce
// delivers it), one recorded started and one pushed are not.
func TestPushNotStartedFindsTheUnstartedOnly(t *testing.T) {
	t.Parallel()
	forEachNotificationRepository(t, func(t *testing.T, repo app.NotificationRepository) {
		ctx := context.Background()
		create(t, repo, needsInput(7, 1, t0))
		failure := create(t, repo, domain.Failure(domain.Session{ID: 7}, "boom", "ev-1", t0))
		message := create(t, repo, domain.AgentMessage{Title: "hello"}.Notification(t0.Add(time.Second)))
		started := create(t, repo, domain.AgentMessage{Title: "started"}.Notification(t0))
		require.NoError(t, repo.MarkPushStarted(ctx, started.ID, t0))
		pushed := create(t, repo, domain.AgentMessage{Title: "pushed"}.Notification(t0))
		_, err := repo.MarkPushed(ctx, pushed.ID, t0)
		require.NoError(t, err)

		got, err := repo.PushNotStarted(ctx, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []domain.Notification{failure, message}, got)
		got, err = repo.PushNotStarted(ctx, t0.Add(time.Hour), 1)
		require.NoError(t, err)
		require.Equal(t, []domain.Notification{failure}, got, "bounded")
		got, err = repo.PushNotStarted(ctx, t0.Add(time.Second), 10)
		require.NoError(t, err)
		require.Equal(t, []domain.Notification{failure}, got, "only those created before the cutoff")

		require.NoError(t, repo.MarkPushStarted(ctx, failure.ID, t0.Add(time.Minute)))
		require.NoError(t, repo.MarkPushStarted(ctx, failure.ID, t0.Add(2*time.Minute)), "recording it again changes nothing")
		require.NoError(t, repo.MarkPushStarted(ctx, 999, t0), "nor does recording one that is gone")
		got, err = repo.PushNotStarted(ctx, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []domain.Notification{message}, got)
	})
}
