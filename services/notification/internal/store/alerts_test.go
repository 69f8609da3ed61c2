package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/app/apptest"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

const window = 15 * time.Minute

var t0 = time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)

// repositories are the AlertRepository implementations the contract holds
// to the same behaviour: the fake decides with domain.Dedup under a mutex,
// Postgres with its exclusion constraint.
var repositories = map[string]func(t *testing.T) app.AlertRepository{
	"fake":     func(*testing.T) app.AlertRepository { return &apptest.Alerts{} },
	"postgres": func(t *testing.T) app.AlertRepository { return store.NewAlerts(pgtest.DB(t, store.Migrations)) },
}

type testBundle struct {
	alerts app.Alerts
	pager  *apptest.Pager
	clock  *clock.Stub
}

func (b testBundle) raise(t *testing.T, key, summary string) (domain.Alert, bool) {
	t.Helper()
	a, paged, err := b.alerts.Raise.Handle(context.Background(), domain.Raise{DedupKey: key, Summary: summary})
	require.NoError(t, err)
	return a, paged
}

func (b testBundle) list(t *testing.T) []domain.Alert {
	t.Helper()
	alerts, err := b.alerts.List.Handle(context.Background(), 0)
	require.NoError(t, err)
	return alerts
}

// forEachRepository runs test as a parallel subtest per implementation,
// each on its own empty repository with the clock at t0.
func forEachRepository(t *testing.T, test func(t *testing.T, b testBundle)) {
	t.Helper()
	for name, newRepo := range repositories {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := testBundle{pager: &apptest.Pager{}, clock: clock.NewStub(t0)}
			b.alerts = app.NewAlerts(newRepo(t), b.pager, b.clock, window)
			test(t, b)
		})
	}
}

func TestFirstRaisePages(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, b testBundle) {
		details := map[string]any{"error": "connection refused", "session_id": float64(42), "nested": map[string]any{"ok": false}}
		a, paged, err := b.alerts.Raise.Handle(context.Background(), domain.Raise{
			DedupKey: "cleanup_running_job", Summary: "cleanup_running_job failed", Details: details,
		})
		require.NoError(t, err)
		require.True(t, paged)
		require.Positive(t, a.ID)
		want := domain.Alert{
			ID: a.ID, DedupKey: "cleanup_running_job", Summary: "cleanup_running_job failed", Details: details,
			Occurrences: 1, FirstSeenAt: t0, LastSeenAt: t0, DedupUntil: t0.Add(window),
		}
		require.Equal(t, want, a)
		require.Equal(t, []domain.Alert{want}, b.pager.Pages(), "paged once, with the stored alert")
		require.Equal(t, []domain.Alert{want}, b.list(t))
	})
}

func TestRepeatInsideTheWindowCountsAndDoesNotPage(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, b testBundle) {
		first, _ := b.raise(t, "k", "first")

		b.clock.Set(t0.Add(time.Minute))
		second, paged := b.raise(t, "k", "second wording")
		require.False(t, paged)
		require.Equal(t, first.ID, second.ID)
		require.EqualValues(t, 2, second.Occurrences)
		require.Equal(t, t0.Add(time.Minute), second.LastSeenAt)
		require.Equal(t, t0, second.FirstSeenAt)
		require.Equal(t, "first", second.Summary, "the page's summary stays")

		b.clock.Set(t0.Add(window - time.Microsecond))
		last, paged := b.raise(t, "k", "third")
		require.False(t, paged, "the window's last microsecond is still inside it")
		require.EqualValues(t, 3, last.Occurrences)
		require.Equal(t, t0.Add(window-time.Microsecond), last.LastSeenAt)

		require.Len(t, b.pager.Pages(), 1)
		require.Equal(t, []domain.Alert{last}, b.list(t))
	})
}

func TestRaiseAfterTheWindowPagesAgain(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, b testBundle) {
		first, _ := b.raise(t, "k", "first")

		b.clock.Set(t0.Add(window)) // dedup_until itself is outside: [first_seen_at, dedup_until)
		second, paged := b.raise(t, "k", "again")
		require.True(t, paged)
		require.NotEqual(t, first.ID, second.ID)
		require.EqualValues(t, 1, second.Occurrences)
		require.Equal(t, t0.Add(2*window), second.DedupUntil)

		b.clock.Set(t0.Add(window + time.Second))
		third, paged := b.raise(t, "k", "repeat of the new one")
		require.False(t, paged)
		require.Equal(t, second.ID, third.ID)
		require.EqualValues(t, 2, third.Occurrences)

		require.Len(t, b.pager.Pages(), 2)
		require.Equal(t, []domain.Alert{third, first}, b.list(t), "newest first; the closed alert is untouched")
	})
}

func TestConcurrentRaisesOfOneKeyPageOnce(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, b testBundle) {
		const raisers = 30
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			paged  int
			ids    = map[int64]bool{}
			errs   []error
			start  = make(chan struct{})
			ctx    = context.Background()
			raiseR = domain.Raise{DedupKey: "db-down", Summary: "database unreachable"}
		)
		for range raisers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				a, p, err := b.alerts.Raise.Handle(ctx, raiseR)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				ids[a.ID] = true
				if p {
					paged++
				}
			}()
		}
		close(start)
		wg.Wait()

		require.Empty(t, errs)
		require.Equal(t, 1, paged, "exactly one raise pages")
		require.Len(t, ids, 1, "every raise lands on the same alert")
		require.Len(t, b.pager.Pages(), 1)
		alerts := b.list(t)
		require.Len(t, alerts, 1)
		require.EqualValues(t, raisers, alerts[0].Occurrences, "every raise is counted")
	})
}

func TestKeysAreIndependent(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, b testBundle) {
		a1, paged1 := b.raise(t, "set_archived_at", "one")
		a2, paged2 := b.raise(t, "clear_trash_expiry", "two")
		require.True(t, paged1)
		require.True(t, paged2, "another key's open alert does not absorb")
		require.NotEqual(t, a1.ID, a2.ID)

		b.clock.Set(t0.Add(time.Minute))
		again, paged := b.raise(t, "set_archived_at", "one again")
		require.False(t, paged)
		require.Equal(t, a1.ID, again.ID)

		byKey := map[string]int32{}
		for _, a := range b.list(t) {
			byKey[a.DedupKey] = a.Occurrences
		}
		require.Equal(t, map[string]int32{"set_archived_at": 2, "clear_trash_expiry": 1}, byKey)
	})
}

// A raiser whose clock runs behind the one that opened the alert is still
// inside the window the database protects: it counts, it does not page or
// fail.
func TestAnAlertOpenedByAClockAheadAbsorbs(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, b testBundle) {
		b.clock.Set(t0.Add(10 * time.Second))
		ahead, _ := b.raise(t, "k", "from the fast clock")
		b.clock.Set(t0)
		behind, paged := b.raise(t, "k", "from the slow clock")
		require.False(t, paged)
		require.Equal(t, ahead.ID, behind.ID)
		require.EqualValues(t, 2, behind.Occurrences)
		require.Equal(t, ahead.LastSeenAt, behind.LastSeenAt, "last_seen_at never moves back")
	})
}

func TestInvalidRaisesStoreAndPageNothing(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, b testBundle) {
		for _, tc := range []struct {
			raise      domain.Raise
			wantFields []string
		}{
			{domain.Raise{Summary: "s"}, []string{"dedup_key"}},
			{domain.Raise{DedupKey: "k"}, []string{"summary"}},
			{domain.Raise{}, []string{"dedup_key", "summary"}},
			{domain.Raise{DedupKey: strings.Repeat("k", domain.MaxDedupKeyChars+1), Summary: "s"}, []string{"dedup_key"}},
		} {
			_, _, err := b.alerts.Raise.Handle(context.Background(), tc.raise)
			var verr *validation.Error
			require.True(t, errors.As(err, &verr), "got %v", err)
			var fields []string
			for _, v := range verr.Violations {
				fields = append(fields, v.Field)
			}
			require.Equal(t, tc.wantFields, fields)
		}
		require.Empty(t, b.list(t))
		require.Empty(t, b.pager.Pages())
	})
}

func TestListIsNewestFirstAndLimited(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, b testBundle) {
		for i, key := range []string{"a", "b", "c"} {
			b.clock.Set(t0.Add(time.Duration(i) * time.Minute))
			b.raise(t, key, "s")
		}
		alerts, err := b.alerts.List.Handle(context.Background(), 2)
		require.NoError(t, err)
		require.Len(t, alerts, 2)
		require.Equal(t, "c", alerts[0].DedupKey)
		require.Equal(t, "b", alerts[1].DedupKey)

		for _, size := range []int{-1, domain.MaxPageSize + 1} {
			_, err := b.alerts.List.Handle(context.Background(), size)
			var verr *validation.Error
			require.True(t, errors.As(err, &verr), "page_size %d: got %v", size, err)
			require.Equal(t, "page_size", verr.Violations[0].Field)
		}
	})
}

// The re-drive's view: an opened alert whose page never started is found
// once a minute old, oldest first and bounded; one recorded started is not.
func TestPagingNotStartedFindsTheUnstartedOnly(t *testing.T) {
	t.Parallel()
	forEachRepository(t, func(t *testing.T, b testBundle) {
		ctx := context.Background()
		repo := b.alerts.Raise.Repo
		b.pager.Fail(errors.New("temporal unavailable"))
		lost, paged := b.raise(t, "lost", "its start failed")
		require.True(t, paged, "the raise answers paged: the page is the re-drive's now")
		b.clock.Set(t0.Add(time.Second))
		second, _ := b.raise(t, "second", "its start failed too")
		b.pager.Fail(nil)
		b.clock.Set(t0.Add(2 * time.Second))
		started, _ := b.raise(t, "started", "paged at once")
		require.Equal(t, []domain.Alert{started}, b.pager.Pages())

		got, err := repo.PagingNotStarted(ctx, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []domain.Alert{lost, second}, got, "oldest first; the started one is not there")
		got, err = repo.PagingNotStarted(ctx, t0.Add(time.Hour), 1)
		require.NoError(t, err)
		require.Equal(t, []domain.Alert{lost}, got, "bounded")
		got, err = repo.PagingNotStarted(ctx, t0.Add(time.Second), 10)
		require.NoError(t, err)
		require.Equal(t, []domain.Alert{lost}, got, "only those opened before the cutoff")

		require.NoError(t, repo.MarkPagingStarted(ctx, lost.ID, t0.Add(time.Minute)))
		require.NoError(t, repo.MarkPagingStarted(ctx, lost.ID, t0.Add(2*time.Minute)), "recording it again changes nothing")
		got, err = repo.PagingNotStarted(ctx, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []domain.Alert{second}, got)

		// A repeat of the unstarted alert counts on it and starts nothing.
		b.clock.Set(t0.Add(3 * time.Second))
		_, paged = b.raise(t, "second", "again")
		require.False(t, paged)
		got, err = repo.PagingNotStarted(ctx, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.EqualValues(t, 2, got[0].Occurrences)
	})
}
