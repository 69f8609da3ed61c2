package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"

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
			if e.Name == (events.Codec{}).EffectName(domain.RetireMessages{}) {
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
	cutoff := sweepNow.Add(-domain.DefaultStaleAfter)
	touched := b.session(t, cutoff.Add(-time.Hour), domain.EventStart, domain.EventPause)
	bystander := b.session(t, cutoff.Add(-2*time.Hour))

	n, err := b.raceUnderLock(t, touched.ID, func(ctx context.Context) (int64, error) {
		return b.staleSweep(0).ArchiveUntouchedSince(ctx, cutoff)
	}, `UPDATE sessions SET updated_at = $2 WHERE id = $1`, touched.ID, sweepNow)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "only the bystander")
	require.Equal(t, domain.StatusArchived, b.status(t, bystander.ID))
	require.Equal(t, domain.StatusNeedsInput, b.status(t, touched.ID), "the touch that committed first wins")
	require.Empty(t, b.timelineMatching(t, touched.ID, "Session moved to trash"))
}

// raceUnderLock holds session id's row lock, runs sweep until it waits on
// that lock, then commits write (a concurrent touch) and returns what the
// sweep did once the lock is released.
func (b sweepBundle) raceUnderLock(t *testing.T, id int64, sweep func(context.Context) (int64, error), write string, args ...any) (int64, error) {
	t.Helper()
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, id)
	require.NoError(t, err)

	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := sweep(ctx)
		done <- result{n, err}
	}()
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting))
		return waiting == 1
	}, 10*time.Second, 10*time.Millisecond, "the sweep waits on the session's lock")
	_, err = tx.Exec(ctx, write, args...)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	r := <-done
	return r.n, r.err
}

func (b sweepBundle) elicitationSweep() app.ExpireElicitationBlocks {
	return app.ExpireElicitationBlocks{Repo: b.repo, Candidates: b.repo, Clock: clock.NewStub(sweepNow),
		Expiry: domain.DefaultElicitationExpiry, Logger: slogx.Discard()}
}

const expiredLine = "[Elicitation] Block expired: no answer for over 1 hour, so Zimmer's expired-elicitation sweep cleared blocked_on_elicitation; the session stays needs_input (lost_elicitation set)"

// TestElicitationSweepClearsExactlyTheStrandedBlocks: only a needs_input
// session blocked on an elicitation for longer than the expiry loses its
// block — it stays needs_input, with lost_elicitation and the line; a
// fresh block, an unblocked session, and a stray marker on a session in
// another state are left alone; a second run finds nothing.
func TestElicitationSweepClearsExactlyTheStrandedBlocks(t *testing.T) {
	t.Parallel()
	b := setupSweeps(t)
	ctx := context.Background()
	cutoff := sweepNow.Add(-domain.DefaultElicitationExpiry)
	old, recent := cutoff.Add(-time.Minute), cutoff.Add(time.Minute)
	start, pause, block, fail := domain.EventStart, domain.EventPause, domain.EventBlockOnElicitation, domain.EventFail
	cases := []struct {
		name        string
		path        []domain.Event
		strayMarker bool // the marker left on a session no longer needs_input
		touched     time.Time
		cleared     bool
	}{
		{"blocked, old", []domain.Event{start, block}, false, old, true},
		{"blocked, a microsecond past the expiry", []domain.Event{start, block}, false, cutoff.Add(-time.Microsecond), true},
		{"blocked, exactly at the expiry", []domain.Event{start, block}, false, cutoff, false},
		{"blocked, recent", []domain.Event{start, block}, false, recent, false},
		{"needs_input, not blocked, old", []domain.Event{start, pause}, false, old, false},
		{"running, old", []domain.Event{start}, false, old, false},
		{"failed with a stray marker, old", []domain.Event{start, block, fail}, true, old, false},
		{"waiting with a stray marker, old", nil, true, old, false},
	}
	ids := make([]int64, len(cases))
	before := make([]domain.Session, len(cases))
	for i, c := range cases {
		s := b.session(t, c.touched, c.path...)
		if c.strayMarker {
			_, err := b.pool.Exec(ctx, `UPDATE sessions SET markers = markers || '{"blocked_on_elicitation": true}' WHERE id = $1`, s.ID)
			require.NoError(t, err)
		}
		got, err := b.sessions.Get.Handle(ctx, strconv.FormatInt(s.ID, 10))
		require.NoError(t, err)
		ids[i], before[i] = s.ID, got
	}

	n, err := b.elicitationSweep().ExpireBlockedSince(ctx, cutoff)
	require.NoError(t, err)
	want := 0
	for i, c := range cases {
		got, err := b.sessions.Get.Handle(ctx, strconv.FormatInt(ids[i], 10))
		require.NoError(t, err)
		if !c.cleared {
			require.Equal(t, before[i], got, "%s: untouched", c.name)
			continue
		}
		want++
		require.Equal(t, domain.StatusNeedsInput, got.Status, c.name)
		require.False(t, got.Markers.BlockedOnElicitation, c.name)
		require.NotNil(t, got.Markers.LostElicitation, c.name)
		require.Equal(t, domain.LostStranded, got.Markers.LostElicitation.Reason, c.name)
		require.Equal(t, sweepNow, got.Markers.LostElicitation.LostAt, c.name)
		require.Equal(t, sweepNow, got.UpdatedAt, c.name)
		require.Equal(t, []string{expiredLine}, b.timelineMatching(t, ids[i], "[Elicitation]"), c.name)
	}
	require.EqualValues(t, want, n)

	again, err := b.elicitationSweep().ExpireBlockedSince(ctx, cutoff)
	require.NoError(t, err)
	require.Zero(t, again, "a second run finds nothing left to clear")
}

// TestElicitationSweepLosesToTheAnswer: the reactive unblock (the
// elicitation answered: back to running, marker gone) commits while the
// sweep waits on the session's lock; the sweep decides again and leaves
// the running session alone.
func TestElicitationSweepLosesToTheAnswer(t *testing.T) {
	t.Parallel()
	b := setupSweeps(t)
	cutoff := sweepNow.Add(-domain.DefaultElicitationExpiry)
	answered := b.session(t, cutoff.Add(-time.Minute), domain.EventStart, domain.EventBlockOnElicitation)
	bystander := b.session(t, cutoff.Add(-2*time.Minute), domain.EventStart, domain.EventBlockOnElicitation)

	n, err := b.raceUnderLock(t, answered.ID, func(ctx context.Context) (int64, error) {
		return b.elicitationSweep().ExpireBlockedSince(ctx, cutoff)
	}, `UPDATE sessions SET status = $2, markers = markers - 'blocked_on_elicitation', updated_at = $3 WHERE id = $1`,
		answered.ID, domain.StatusRunning, sweepNow)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "only the bystander")

	got, err := b.sessions.Get.Handle(context.Background(), strconv.FormatInt(answered.ID, 10))
	require.NoError(t, err)
	require.Equal(t, domain.StatusRunning, got.Status, "the answer that committed first wins")
	require.Nil(t, got.Markers.LostElicitation)
	require.Empty(t, b.timelineMatching(t, answered.ID, "[Elicitation]"))
	require.Equal(t, domain.StatusNeedsInput, b.status(t, bystander.ID))
	require.Equal(t, []string{expiredLine}, b.timelineMatching(t, bystander.ID, "[Elicitation]"))
}

// fakeQueue answers HasPendingMessages from a table, failing for sessions
// it has no answer for, and records who was asked.
type fakeQueue struct {
	mu      sync.Mutex
	pending map[int64]bool
	asked   []int64
}

func (q *fakeQueue) HasPendingMessages(_ context.Context, id int64) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.asked = append(q.asked, id)
	p, ok := q.pending[id]
	if !ok {
		return false, errors.New("queue unavailable")
	}
	return p, nil
}

func (b sweepBundle) heartbeatSweep(q app.PendingMessages) app.NudgeHeartbeats {
	return app.NudgeHeartbeats{Repo: b.repo, Candidates: b.repo, Clock: clock.NewStub(sweepNow),
		TrashRetention: app.DefaultTrashRetention, Queue: q, Logger: slogx.Discard()}
}

// heartbeatCutoff is what the schedule passes: the run's time less the
// shortest heartbeat interval.
var heartbeatCutoff = sweepNow.Add(-domain.MinHeartbeatSeconds * time.Second)

// heartbeatSession is a session driven through path, its heartbeat set,
// at rest since restedAt.
func (b sweepBundle) heartbeatSession(t *testing.T, enabled bool, interval int32, restedAt time.Time, path ...domain.Event) int64 {
	t.Helper()
	s := b.session(t, restedAt, path...)
	_, err := b.pool.Exec(context.Background(), `UPDATE sessions SET heartbeat_enabled = $2, heartbeat_interval_seconds = $3 WHERE id = $1`,
		s.ID, enabled, interval)
	require.NoError(t, err)
	return s.ID
}

// turns are the turns lifecycle asked the runner for on the session.
func (b sweepBundle) turns(t *testing.T, id int64) []*lifecyclev1.TurnRequest {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT payload FROM outbox_messages
		WHERE subscriber = $1 AND topic = $2 AND aggregate_key = $3 ORDER BY id`,
		events.SubscriberRunnerTurns, events.TopicSessionUpdated, strconv.FormatInt(id, 10))
	require.NoError(t, err)
	payloads, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	require.NoError(t, err)
	var out []*lifecyclev1.TurnRequest
	for _, p := range payloads {
		msg, err := events.Decode(p)
		require.NoError(t, err)
		if turn := msg.GetUpdated().GetTurn(); turn != nil {
			out = append(out, turn)
		}
	}
	return out
}

// TestHeartbeatSweepNudgesExactlyTheSpecsSessions: a needs_input session
// with its heartbeat on, at rest for its interval, resumes with the
// heartbeat prompt as its turn; one not yet due, with its heartbeat off,
// blocked on an elicitation, in another state, holding a pending message
// or whose queue did not answer is left alone; a second run finds nothing
// (the nudged ones are running).
func TestHeartbeatSweepNudgesExactlyTheSpecsSessions(t *testing.T) {
	t.Parallel()
	b := setupSweeps(t)
	ctx := context.Background()
	start, pause, block, fail := domain.EventStart, domain.EventPause, domain.EventBlockOnElicitation, domain.EventFail
	rested := func(d time.Duration) time.Time { return sweepNow.Add(-d) }
	cases := []struct {
		name     string
		enabled  bool
		interval int32
		restedAt time.Time
		path     []domain.Event
		queue    string // "empty", "pending", "error"
		nudged   bool
	}{
		{"due: at rest past its interval", true, 60, rested(61 * time.Second), []domain.Event{start, pause}, "empty", true},
		{"due: at rest exactly its interval", true, 60, rested(60 * time.Second), []domain.Event{start, pause}, "empty", true},
		{"due: a day's interval, a day and a minute at rest", true, 86400, rested(24*time.Hour + time.Minute), []domain.Event{start, pause}, "empty", true},
		{"not yet due", true, 60, rested(59 * time.Second), []domain.Event{start, pause}, "empty", false},
		{"not yet due: a longer interval", true, 3600, rested(61 * time.Second), []domain.Event{start, pause}, "empty", false},
		{"heartbeat off", false, 60, rested(time.Hour), []domain.Event{start, pause}, "empty", false},
		{"blocked on an elicitation", true, 60, rested(time.Hour), []domain.Event{start, block}, "empty", false},
		{"holding a pending message", true, 60, rested(time.Hour), []domain.Event{start, pause}, "pending", false},
		{"its queue did not answer", true, 60, rested(time.Hour), []domain.Event{start, pause}, "error", false},
		{"running", true, 60, rested(time.Hour), []domain.Event{start}, "empty", false},
		{"waiting", true, 60, rested(time.Hour), nil, "empty", false},
		{"failed", true, 60, rested(time.Hour), []domain.Event{start, fail}, "empty", false},
	}
	q := &fakeQueue{pending: map[int64]bool{}}
	ids := make([]int64, len(cases))
	before := make([]domain.Session, len(cases))
	for i, c := range cases {
		ids[i] = b.heartbeatSession(t, c.enabled, c.interval, c.restedAt, c.path...)
		switch c.queue {
		case "empty":
			q.pending[ids[i]] = false
		case "pending":
			q.pending[ids[i]] = true
		}
		got, err := b.sessions.Get.Handle(ctx, strconv.FormatInt(ids[i], 10))
		require.NoError(t, err)
		before[i] = got
	}
	turnsBefore := make([]int, len(cases))
	for i := range cases {
		turnsBefore[i] = len(b.turns(t, ids[i]))
	}

	n, err := b.heartbeatSweep(q).NudgeRestingSince(ctx, heartbeatCutoff)
	require.NoError(t, err)
	want := 0
	for i, c := range cases {
		got, err := b.sessions.Get.Handle(ctx, strconv.FormatInt(ids[i], 10))
		require.NoError(t, err)
		turns := b.turns(t, ids[i])
		if !c.nudged {
			require.Equal(t, before[i], got, "%s: untouched", c.name)
			require.Len(t, turns, turnsBefore[i], "%s: no turn asked", c.name)
			continue
		}
		want++
		require.Equal(t, domain.StatusRunning, got.Status, c.name)
		require.Len(t, turns, turnsBefore[i]+1, c.name)
		last := turns[len(turns)-1]
		require.Equal(t, domain.HeartbeatPrompt, last.GetPrompt(), c.name)
		require.Equal(t, got.Markers.RunningJobID, last.GetJobId(), "%s: the turn runs under the resume's job", c.name)
		require.Len(t, b.timelineMatching(t, ids[i], "[Heartbeat] Zimmer's heartbeat sweep resumed the session"), 1, c.name)
	}
	require.EqualValues(t, want, n)

	again, err := b.heartbeatSweep(q).NudgeRestingSince(ctx, heartbeatCutoff)
	require.NoError(t, err)
	require.Zero(t, again, "a second run finds nothing due")
}

// TestHeartbeatSweepLosesToATouchThatCommitsFirst: a follow-up delivered
// (the session touched and running) while the sweep waits on the lock wins;
// the sweep decides again and asks for no turn.
func TestHeartbeatSweepLosesToATouchThatCommitsFirst(t *testing.T) {
	t.Parallel()
	b := setupSweeps(t)
	touched := b.heartbeatSession(t, true, 60, sweepNow.Add(-time.Hour), domain.EventStart, domain.EventPause)
	bystander := b.heartbeatSession(t, true, 60, sweepNow.Add(-2*time.Hour), domain.EventStart, domain.EventPause)
	q := &fakeQueue{pending: map[int64]bool{touched: false, bystander: false}}
	turns := len(b.turns(t, touched))

	n, err := b.raceUnderLock(t, touched, func(ctx context.Context) (int64, error) {
		return b.heartbeatSweep(q).NudgeRestingSince(ctx, heartbeatCutoff)
	}, `UPDATE sessions SET updated_at = $2 WHERE id = $1`, touched, sweepNow)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "only the bystander")
	require.Equal(t, domain.StatusNeedsInput, b.status(t, touched), "the touch that committed first wins")
	require.Len(t, b.turns(t, touched), turns)
	require.Equal(t, domain.StatusRunning, b.status(t, bystander))
}
