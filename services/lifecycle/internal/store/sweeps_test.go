package store_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// sweepNow is the sweeps' clock in these tests.
var sweepNow = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

type sweepBundle struct {
	pool     *pgxpool.Pool
	repo     *store.Sessions
	sessions app.Sessions
	clock    *clock.Stub
}

func setupSweeps(t *testing.T) sweepBundle {
	t.Helper()
	pool := pgtest.DB(t, inbox.Migrations, outbox.Migrations, store.Migrations)
	repo := store.NewSessions(pool, events.Codec{}, nil, slogx.Discard())
	clk := clock.NewStub(sweepNow.Add(-30 * 24 * time.Hour))
	return sweepBundle{pool: pool, repo: repo, sessions: app.NewSessions(repo, clk, app.DefaultTrashRetention), clock: clk}
}

// session creates a session, drives it through events and then dates its
// last touch at updatedAt, as if nothing had happened to it since.
func (b sweepBundle) session(t *testing.T, updatedAt time.Time, path ...domain.Event) domain.Session {
	t.Helper()
	ctx := context.Background()
	s, err := b.sessions.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	ref := strconv.FormatInt(s.ID, 10)
	for _, e := range path {
		_, err := b.sessions.Transition.Fire(ctx, ref, string(e), domain.Command{RunningJobID: "job"})
		require.NoError(t, err)
	}
	_, err = b.pool.Exec(ctx, `UPDATE sessions SET updated_at = $2 WHERE id = $1`, s.ID, updatedAt)
	require.NoError(t, err)
	return s
}

func (b sweepBundle) status(t *testing.T, id int64) domain.Status {
	t.Helper()
	s, err := b.sessions.Get.Handle(context.Background(), strconv.FormatInt(id, 10))
	require.NoError(t, err)
	return s.Status
}

func (b sweepBundle) timelineMatching(t *testing.T, id int64, substr string) []string {
	t.Helper()
	lines, err := b.sessions.History.Timeline(context.Background(), strconv.FormatInt(id, 10))
	require.NoError(t, err)
	var out []string
	for _, l := range lines {
		if strings.Contains(l.Message, substr) {
			out = append(out, l.Message)
		}
	}
	return out
}

func (b sweepBundle) staleSweep(batch int) app.ArchiveStaleSessions {
	return app.ArchiveStaleSessions{Repo: b.repo, Candidates: b.repo, Clock: clock.NewStub(sweepNow),
		TrashRetention: app.DefaultTrashRetention, After: domain.DefaultStaleAfter, Batch: batch, Logger: slogx.Discard()}
}

// The spec's stale-session line, word for word.
const staleLine = "[State Machine] Session moved to trash by Zimmer's stale-session sweep (untouched for 7 days)"

// TestStaleSweepArchivesExactlyTheUntouchedAtRest: every state at every
// age against the spec's rule — untouched for 7 days and neither running
// nor archived — each archived one with the spec's line and its queue's
// retirement, unforced so it pages; a second run finds nothing.
func TestStaleSweepArchivesExactlyTheUntouchedAtRest(t *testing.T) {
	t.Parallel()
	b := setupSweeps(t)
	cutoff := sweepNow.Add(-domain.DefaultStaleAfter)
	old, recent := cutoff.Add(-time.Hour), cutoff.Add(time.Hour)
	start, pause, fail, archive := domain.EventStart, domain.EventPause, domain.EventFail, domain.EventArchive
	cases := []struct {
		name     string
		path     []domain.Event
		touched  time.Time
		archived bool
	}{
		{"waiting, never started, old", nil, old, true},
		{"needs_input, old", []domain.Event{start, pause}, old, true},
		{"failed, old", []domain.Event{start, fail}, old, true},
		{"needs_input, a microsecond past the cutoff", []domain.Event{start, pause}, cutoff.Add(-time.Microsecond), true},
		{"running, old", []domain.Event{start}, old, false},
		{"archived, old", []domain.Event{archive}, old, false},
		{"waiting, recent", nil, recent, false},
		{"needs_input, recent", []domain.Event{start, pause}, recent, false},
		{"failed, recent", []domain.Event{start, fail}, recent, false},
		{"needs_input, exactly at the cutoff", []domain.Event{start, pause}, cutoff, false},
	}
	ids := make([]int64, len(cases))
	before := make([]domain.Status, len(cases))
	for i, c := range cases {
		s := b.session(t, c.touched, c.path...)
		ids[i], before[i] = s.ID, b.status(t, s.ID)
	}

	n, err := b.staleSweep(0).ArchiveUntouchedSince(context.Background(), cutoff)
	require.NoError(t, err)
	want := 0
	for i, c := range cases {
		if !c.archived {
			require.Equal(t, before[i], b.status(t, ids[i]), c.name)
			require.Empty(t, b.timelineMatching(t, ids[i], "stale-session sweep"), c.name)
			continue
		}
		want++
		require.Equal(t, domain.StatusArchived, b.status(t, ids[i]), c.name)
		require.Equal(t, []string{staleLine}, b.timelineMatching(t, ids[i], "Session moved to trash"), c.name)
		evs, err := b.sessions.History.Events(context.Background(), strconv.FormatInt(ids[i], 10))
		require.NoError(t, err)
		var retired []map[string]any
		for _, e := range evs {
			if e.Name == domain.EffectRetireMessages {
				require.True(t, e.Alerting, c.name)
				retired = append(retired, e.Payload)
			}
		}
		require.Len(t, retired, 1, c.name)
		require.Equal(t, false, retired[0]["forced"], "%s: a system archive never forces, so what it retires pages", c.name)
	}
	require.EqualValues(t, want, n)

	again, err := b.staleSweep(0).ArchiveUntouchedSince(context.Background(), cutoff)
	require.NoError(t, err)
	require.Zero(t, again, "a second run finds nothing left to archive")
	for i, c := range cases {
		if c.archived {
			require.Len(t, b.timelineMatching(t, ids[i], "Session moved to trash"), 1, "%s: archived once", c.name)
		}
	}
}

// TestStaleSweepWorksOffABacklogInBatches: a run archives at most its
// batch, the longest untouched first; the next run takes the rest.
func TestStaleSweepWorksOffABacklogInBatches(t *testing.T) {
	t.Parallel()
	b := setupSweeps(t)
	cutoff := sweepNow.Add(-domain.DefaultStaleAfter)
	oldest := b.session(t, cutoff.Add(-3*time.Hour))
	older := b.session(t, cutoff.Add(-2*time.Hour))
	old := b.session(t, cutoff.Add(-time.Hour))
	sweep := b.staleSweep(2)

	n, err := sweep.ArchiveUntouchedSince(context.Background(), cutoff)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	require.Equal(t, domain.StatusArchived, b.status(t, oldest.ID))
	require.Equal(t, domain.StatusArchived, b.status(t, older.ID))
	require.Equal(t, domain.StatusWaiting, b.status(t, old.ID), "beyond the batch: the next run's")

	n, err = sweep.ArchiveUntouchedSince(context.Background(), cutoff)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, domain.StatusArchived, b.status(t, old.ID))
}

// TestStaleSweepLosesToATouchThatCommitsFirst: the sweep lists a session
// as stale, but a touch holds its row lock; the sweep waits on the lock,
// decides again from the touched row and leaves it alone.
func TestStaleSweepLosesToATouchThatCommitsFirst(t *testing.T) {
	t.Parallel()
	b := setupSweeps(t)
	ctx := context.Background()
	cutoff := sweepNow.Add(-domain.DefaultStaleAfter)
	touched := b.session(t, cutoff.Add(-time.Hour), domain.EventStart, domain.EventPause)
	bystander := b.session(t, cutoff.Add(-2*time.Hour))

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, touched.ID)
	require.NoError(t, err)

	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := b.staleSweep(0).ArchiveUntouchedSince(ctx, cutoff)
		done <- result{n, err}
	}()
	// The sweep has archived the bystander and now waits on the lock.
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting))
		return waiting == 1
	}, 10*time.Second, 10*time.Millisecond)
	_, err = tx.Exec(ctx, `UPDATE sessions SET updated_at = $2 WHERE id = $1`, touched.ID, sweepNow)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	r := <-done
	require.NoError(t, r.err)
	require.EqualValues(t, 1, r.n, "only the bystander")
	require.Equal(t, domain.StatusArchived, b.status(t, bystander.ID))
	require.Equal(t, domain.StatusNeedsInput, b.status(t, touched.ID), "the touch that committed first wins")
	require.Empty(t, b.timelineMatching(t, touched.ID, "Session moved to trash"))
}
