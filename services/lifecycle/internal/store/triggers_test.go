package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

var trigNow = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

type trigBundle struct {
	pool     *pgxpool.Pool
	clock    *clock.Stub
	sessions app.Sessions
	triggers app.Triggers
	fire     app.FireTrigger
	delivery *fakeWakeDelivery
}

// fakeWakeDelivery stands in for the queue's FollowUp: it records each key
// once and answers as the queue would (queued behind a running turn,
// refused on a closed session, delivered otherwise, by resuming the
// session through lifecycle's own DeliverTurn).
type fakeWakeDelivery struct {
	mu        sync.Mutex
	deliver   app.DeliverTurn
	keys      map[string]int
	failFirst int // calls that fail before any is tried
}

func (f *fakeWakeDelivery) DeliverWake(ctx context.Context, sessionID int64, prompt, key string) (bool, error) {
	f.mu.Lock()
	if f.failFirst > 0 {
		f.failFirst--
		f.mu.Unlock()
		return false, errors.New("the queue is down")
	}
	f.keys[key]++
	f.mu.Unlock()
	d, err := f.deliver.Handle(ctx, sessionID, domain.DeliverCommand{DeliveryID: key, Prompt: prompt, Mode: domain.DeliverToIdle, What: key})
	switch {
	case err != nil:
		return false, err
	case d.Refused != nil && d.Refused.Reason == domain.RefusedClosed:
		return false, fmt.Errorf("%w: %s", app.ErrWakeRefused, d.Refused.Message)
	case d.Refused != nil && d.Refused.Reason == domain.RefusedBusy:
		return true, nil // queued behind the running turn
	case d.Refused != nil:
		return false, fmt.Errorf("%w: %s", app.ErrWakeRefused, d.Refused.Message)
	}
	return false, nil
}

func (f *fakeWakeDelivery) calls(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keys[key]
}

func trigSetup(t *testing.T) trigBundle {
	t.Helper()
	pool := pgtest.DB(t, inbox.Migrations, outbox.Migrations, store.Migrations)
	repo := store.NewSessions(pool, events.Codec{}, nil, slogx.Discard())
	clk := clock.NewStub(trigNow)
	sessions := app.NewSessions(repo, clk, app.DefaultTrashRetention)
	d := &fakeWakeDelivery{deliver: sessions.Deliver, keys: map[string]int{}}
	return trigBundle{pool: pool, clock: clk, sessions: sessions, triggers: app.NewTriggers(repo, sessions),
		fire: app.FireTrigger{Repo: repo, Clock: clk, Delivery: d}, delivery: d}
}

func (b trigBundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

// sessionIn creates a session that ran and brings it to st.
func (b trigBundle) sessionIn(t *testing.T, st domain.Status) domain.Session {
	t.Helper()
	ctx := context.Background()
	s, err := b.sessions.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	ref := strconv.FormatInt(s.ID, 10)
	path := map[domain.Status][]domain.Event{
		domain.StatusWaiting:    {domain.EventStart, domain.EventPause, domain.EventSleep},
		domain.StatusRunning:    {domain.EventStart},
		domain.StatusNeedsInput: {domain.EventStart, domain.EventPause},
		domain.StatusFailed:     {domain.EventStart, domain.EventFail},
		domain.StatusArchived:   {domain.EventStart, domain.EventArchive},
	}[st]
	for _, e := range path {
		_, err := b.sessions.Transition.Fire(ctx, ref, string(e), domain.Command{})
		require.NoError(t, err)
	}
	got, err := b.sessions.Get.Handle(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, st, got.Status)
	return got
}

func (b trigBundle) wakeIn(t *testing.T, s domain.Session, d time.Duration) app.Armed {
	t.Helper()
	at := b.clock.Now().Add(d)
	a, err := b.triggers.WakeMeUpLater(context.Background(), strconv.FormatInt(s.ID, 10), domain.WakeRequest{WakeAt: rfc(at)}, domain.Actor{})
	require.NoError(t, err)
	return a
}

func (b trigBundle) armed(t *testing.T, id int64) []domain.Trigger {
	t.Helper()
	ts, err := b.triggers.List(context.Background(), strconv.FormatInt(id, 10))
	require.NoError(t, err)
	return ts
}

func (b trigBundle) status(t *testing.T, triggerID int64) string {
	t.Helper()
	var st string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT status FROM wake_triggers WHERE id = $1`, triggerID).Scan(&st))
	return st
}

func TestArmingFromEachState(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	for st, want := range map[domain.Status]domain.Status{
		domain.StatusNeedsInput: domain.StatusWaiting,
		domain.StatusWaiting:    domain.StatusWaiting,
		domain.StatusRunning:    domain.StatusRunning,
	} {
		s := b.sessionIn(t, st)
		a := b.wakeIn(t, s, time.Hour)
		require.Equal(t, want, a.Session.Status, "from %s", st)
		require.Equal(t, st == domain.StatusRunning, a.Session.Markers.PendingSleep, "from %s", st)
		got, err := b.sessions.Get.Handle(ctx, strconv.FormatInt(s.ID, 10))
		require.NoError(t, err)
		require.Equal(t, a.Session.Version, got.Version, "the answer's version is the stored one (from %s)", st)
		require.Equal(t, s.Version+1, got.Version, "one committed change, one version (from %s)", st)
		require.Len(t, b.armed(t, s.ID), 1)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM outbox_messages WHERE topic = $1 AND subscriber = 'triggers' AND aggregate_key = $2`,
			events.TopicTriggerArmed, strconv.FormatInt(s.ID, 10)), "the timer hears of it from the same commit")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1 AND message LIKE '[Trigger] wake-up #% armed for 2026-11-30T10:00:00 (UTC) (wake_me_up_later)'`, s.ID))
	}
	for _, st := range []domain.Status{domain.StatusFailed, domain.StatusArchived} {
		s := b.sessionIn(t, st)
		at := trigNow.Add(time.Hour)
		_, err := b.triggers.WakeMeUpLater(ctx, strconv.FormatInt(s.ID, 10), domain.WakeRequest{WakeAt: rfc(at)}, domain.Actor{})
		require.ErrorIs(t, err, domain.ErrPrecondition, "from %s", st)
		require.Empty(t, b.armed(t, s.ID))
	}
}

func TestArmingRefusalsNameTheirFields(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	s := b.sessionIn(t, domain.StatusNeedsInput)
	ref := strconv.FormatInt(s.ID, 10)
	past, grace := trigNow.Add(-time.Minute), trigNow.Add(10*time.Second)
	for name, tc := range map[string]struct {
		req   domain.WakeRequest
		field string
	}{
		"past":    {domain.WakeRequest{WakeAt: rfc(past)}, "wake_at"},
		"grace":   {domain.WakeRequest{WakeAt: rfc(grace)}, "wake_at"},
		"neither": {domain.WakeRequest{}, "wake_at"},
		"delay":   {domain.WakeRequest{Delay: "10s"}, "delay"},
	} {
		_, err := b.triggers.WakeMeUpLater(ctx, ref, tc.req, domain.Actor{})
		var (
			verr    *validation.Error
			refused *domain.WakeRefusal
		)
		if errors.As(err, &refused) {
			require.Equal(t, tc.field, refused.Field, name)
			continue
		}
		require.ErrorAs(t, err, &verr, name)
		require.Equal(t, tc.field, verr.Violations[0].Field, name)
	}
	_, err := b.triggers.PauseUntil(ctx, ref, domain.WakeRequest{WakeAt: rfc(grace), Prompt: ""}, domain.Actor{})
	require.ErrorContains(t, err, "grace window")
	_, err = b.triggers.Watch(ctx, ref, domain.WatchRequest{WatchedSessionID: s.ID, States: []string{"failed"}}, domain.Actor{})
	require.ErrorContains(t, err, "cannot watch itself")
	_, err = b.triggers.Watch(ctx, ref, domain.WatchRequest{WatchedSessionID: 99999, States: []string{"failed"}}, domain.Actor{})
	var verr *validation.Error
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "watched_session_id", verr.Violations[0].Field)
	require.Zero(t, b.count(t, `SELECT count(*) FROM wake_triggers`), "a refusal writes nothing")
	got, err := b.sessions.Get.Handle(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, domain.StatusNeedsInput, got.Status)
}

// TestPauseUntilSupersedesAtomically: 20 concurrent Pause Untils leave
// exactly one armed, and at no moment is there none or two.
func TestPauseUntilSupersedesAtomically(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	s := b.sessionIn(t, domain.StatusNeedsInput)
	ref := strconv.FormatInt(s.ID, 10)
	first := trigNow.Add(time.Hour)
	_, err := b.triggers.PauseUntil(ctx, ref, domain.WakeRequest{WakeAt: rfc(first), Prompt: ""}, domain.Actor{})
	require.NoError(t, err)

	stop := make(chan struct{})
	var seen []int
	var watch sync.WaitGroup
	watch.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			seen = append(seen, b.count(t, `SELECT count(*) FROM wake_triggers WHERE session_id = $1 AND status = 'armed'`, s.ID))
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			at := trigNow.Add(time.Duration(i+2) * time.Hour)
			_, err := b.triggers.PauseUntil(ctx, ref, domain.WakeRequest{WakeAt: rfc(at), Prompt: fmt.Sprint("p", i)}, domain.Actor{})
			errs <- err
		})
	}
	wg.Wait()
	close(stop)
	watch.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, b.armed(t, s.ID), 1, "exactly one Pause Until armed")
	require.Equal(t, 20, b.count(t, `SELECT count(*) FROM wake_triggers WHERE session_id = $1 AND status = 'cancelled'`, s.ID))
	require.NotEmpty(t, seen)
	for _, n := range seen {
		require.Equal(t, 1, n, "never none and never two armed in between")
	}
	// Issue 23 rule 3: a wake_me_up_later beside it is the session's own
	// one-time wake-up too, superseded by the next Pause Until; a watcher
	// and another session's wake-ups are not.
	agent := b.wakeIn(t, s, 3*time.Hour)
	other := b.sessionIn(t, domain.StatusNeedsInput)
	b.wakeIn(t, other, 3*time.Hour)
	watched := b.sessionIn(t, domain.StatusRunning)
	_, err = b.triggers.Watch(ctx, ref, domain.WatchRequest{WatchedSessionID: watched.ID, States: []string{"failed"}}, domain.Actor{})
	require.NoError(t, err)
	at := trigNow.Add(4 * time.Hour)
	_, err = b.triggers.PauseUntil(ctx, ref, domain.WakeRequest{WakeAt: rfc(at), Prompt: ""}, domain.Actor{})
	require.NoError(t, err)
	require.Len(t, b.armed(t, s.ID), 2, "the new Pause Until and the watcher")
	require.Equal(t, "cancelled", b.status(t, agent.Trigger.ID))
	require.Len(t, b.armed(t, other.ID), 1, "another session's wake is its own")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1 AND message LIKE $2`, s.ID,
		fmt.Sprintf("%%superseding wake-ups #%%, #%d", agent.Trigger.ID)), "the line names what it superseded")
}

// TestResumeCancelsRecoveryPreserves: a deliberate resume cancels every
// wake-up the session armed for itself in its own transaction, one-time
// wakes and watchers alike (issue 20 item 6: a watcher left armed woke the
// session later while it was busy); a recovery resume keeps them all and
// re-sleeps after its turn only if a one-time wake is still armed then.
func TestResumeCancelsRecoveryPreserves(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	other := b.sessionIn(t, domain.StatusRunning)

	s := b.sessionIn(t, domain.StatusNeedsInput)
	ref := strconv.FormatInt(s.ID, 10)
	a := b.wakeIn(t, s, time.Hour)
	watch, err := b.triggers.Watch(ctx, ref, domain.WatchRequest{WatchedSessionID: other.ID, States: []string{"failed"}}, domain.Actor{})
	require.NoError(t, err)
	out, err := b.sessions.Transition.Handle(ctx, ref, app.VerbRestart, domain.Command{})
	require.NoError(t, err)
	require.Equal(t, "cancelled", b.status(t, a.Trigger.ID))
	require.Equal(t, "cancelled", b.status(t, watch.Trigger.ID), "a deliberate resume cancels the watcher too")
	require.Empty(t, b.armed(t, s.ID))
	got, err := b.sessions.Get.Handle(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, out.Session.Version, got.Version)
	// The watched session reaching the state no longer wakes the resumed one.
	_, err = b.sessions.Transition.Fire(ctx, strconv.FormatInt(other.ID, 10), "fail", domain.Command{})
	require.NoError(t, err)
	require.Equal(t, "cancelled", b.status(t, watch.Trigger.ID))

	r := b.sessionIn(t, domain.StatusNeedsInput)
	rref := strconv.FormatInt(r.ID, 10)
	a = b.wakeIn(t, r, time.Hour)
	watched := b.sessionIn(t, domain.StatusRunning)
	rwatch, err := b.triggers.Watch(ctx, rref, domain.WatchRequest{WatchedSessionID: watched.ID, States: []string{"failed"}}, domain.Actor{})
	require.NoError(t, err)
	out, err = b.sessions.Transition.Fire(ctx, rref, "resume", domain.Command{SystemRecovery: true})
	require.NoError(t, err)
	require.Equal(t, "armed", b.status(t, a.Trigger.ID), "a recovery resume keeps the wake")
	require.Equal(t, "armed", b.status(t, rwatch.Trigger.ID), "and the watcher")
	_, err = b.triggers.Cancel(ctx, rref, rwatch.Trigger.ID, "")
	require.NoError(t, err)
	require.True(t, out.Session.Markers.PendingSleepRequiresWake)
	out, err = b.sessions.Transition.Fire(ctx, rref, "pause", domain.Command{})
	require.NoError(t, err)
	require.Equal(t, domain.StatusWaiting, out.Session.Status, "still armed at the turn's end: sleep again")

	// Again, but the wake is cancelled during the recovery turn.
	_, err = b.sessions.Transition.Fire(ctx, rref, "resume", domain.Command{SystemRecovery: true})
	require.NoError(t, err)
	_, err = b.triggers.Cancel(ctx, rref, a.Trigger.ID, "")
	require.NoError(t, err)
	out, err = b.sessions.Transition.Fire(ctx, rref, "pause", domain.Command{})
	require.NoError(t, err)
	require.Equal(t, domain.StatusNeedsInput, out.Session.Status, "nothing armed any more: no sleep")
}

// TestArmDuringResume: arming and a deliberate resume of one session race;
// the session's lock orders them, so either the wake was armed first and
// the resume cancelled it, or the resume came first and the wake is armed
// (and the session, running, sleeps at its turn's end). Never a wake
// cancelled while the session it was to wake sleeps.
func TestArmDuringResume(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	for range 10 {
		s := b.sessionIn(t, domain.StatusNeedsInput)
		ref := strconv.FormatInt(s.ID, 10)
		var (
			wg  sync.WaitGroup
			arm app.Armed
		)
		wg.Go(func() {
			at := trigNow.Add(time.Hour)
			var err error
			arm, err = b.triggers.WakeMeUpLater(ctx, ref, domain.WakeRequest{WakeAt: rfc(at)}, domain.Actor{})
			require.NoError(t, err)
		})
		wg.Go(func() {
			_, err := b.sessions.Transition.Handle(ctx, ref, app.VerbRestart, domain.Command{})
			// The wake may have slept it first: then the restart resumes
			// from waiting, which the machine allows too.
			require.NoError(t, err)
		})
		wg.Wait()
		got, err := b.sessions.Get.Handle(ctx, ref)
		require.NoError(t, err)
		require.Equal(t, domain.StatusRunning, got.Status)
		switch b.status(t, arm.Trigger.ID) {
		case "cancelled":
			require.False(t, got.Markers.PendingSleep, "armed first, then resumed: the resume took the wake and its sleep")
		case "armed":
			require.True(t, got.Markers.PendingSleep, "resumed first: the wake sleeps it at its turn's end")
		default:
			t.Fatalf("trigger %d is %s", arm.Trigger.ID, b.status(t, arm.Trigger.ID))
		}
	}
}

// TestFireDuringCancel: firing and cancelling one trigger race; the lock
// orders them: either it fired (and the cancel is NotFound) or it was
// cancelled (and the firing delivered nothing).
func TestFireDuringCancel(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	for range 10 {
		s := b.sessionIn(t, domain.StatusNeedsInput)
		ref := strconv.FormatInt(s.ID, 10)
		a := b.wakeIn(t, s, time.Minute)
		var (
			wg        sync.WaitGroup
			cancelErr error
			fired     app.Fired
		)
		late := trigNow.Add(2 * time.Minute)
		fireClock := clock.NewStub(late)
		fire := b.fire
		fire.Clock = fireClock
		wg.Go(func() {
			var err error
			fired, err = fire.Handle(ctx, s.ID, a.Trigger.ID)
			require.NoError(t, err)
		})
		wg.Go(func() { _, cancelErr = b.triggers.Cancel(ctx, ref, a.Trigger.ID, "") })
		wg.Wait()
		key := app.WakeKey(a.Trigger.ID)
		switch b.status(t, a.Trigger.ID) {
		case "fired":
			require.ErrorIs(t, cancelErr, domain.ErrNotFound)
			require.Equal(t, 1, b.delivery.calls(key))
		case "cancelled":
			require.NoError(t, cancelErr)
			require.Equal(t, domain.FireNothing, fired.Step)
			require.Zero(t, b.delivery.calls(key), "a cancelled trigger fires into nothing")
		default:
			t.Fatalf("trigger %d is %s", a.Trigger.ID, b.status(t, a.Trigger.ID))
		}
	}
}

func TestFireTrigger(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()

	s := b.sessionIn(t, domain.StatusNeedsInput)
	a := b.wakeIn(t, s, time.Minute)
	b.wakeIn(t, s, 2*time.Hour) // a sibling, which the delivery's resume cancels
	fire := b.fire
	fire.Clock = clock.NewStub(a.Trigger.FireAt.Add(-time.Microsecond))
	_, err := fire.Handle(ctx, s.ID, a.Trigger.ID)
	require.ErrorIs(t, err, domain.ErrEarly, "never early")
	require.Equal(t, "armed", b.status(t, a.Trigger.ID))

	fire.Clock = clock.NewStub(a.Trigger.FireAt)
	b.delivery.failFirst = 1
	_, err = fire.Handle(ctx, s.ID, a.Trigger.ID)
	require.Error(t, err, "the queue is down: retried")
	require.Equal(t, "firing", b.status(t, a.Trigger.ID))
	f, err := fire.Handle(ctx, s.ID, a.Trigger.ID)
	require.NoError(t, err, "the retry finds it firing and delivers")
	require.Equal(t, domain.FireDeliver, f.Step)
	require.Equal(t, "fired", b.status(t, a.Trigger.ID))
	require.Equal(t, 1, b.delivery.calls(app.WakeKey(a.Trigger.ID)))
	got, err := b.sessions.Get.Handle(ctx, strconv.FormatInt(s.ID, 10))
	require.NoError(t, err)
	require.Equal(t, domain.StatusRunning, got.Status, "the wake's prompt is its turn")
	require.Empty(t, b.armed(t, s.ID), "the delivery's resume cancelled the sibling")
	f, err = fire.Handle(ctx, s.ID, a.Trigger.ID)
	require.NoError(t, err)
	require.Equal(t, domain.FireNothing, f.Step, "fired once")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1 AND message = $2`, s.ID,
		fmt.Sprintf("[Trigger] wake-up #%d fired: its prompt was delivered as the session's turn", a.Trigger.ID)))

	// Archived: nothing to do, and the timeline says so.
	arch := b.sessionIn(t, domain.StatusNeedsInput)
	a = b.wakeIn(t, arch, time.Minute)
	_, err = b.sessions.Transition.Fire(ctx, strconv.FormatInt(arch.ID, 10), "archive", domain.Command{})
	require.NoError(t, err)
	f, err = fire.Handle(ctx, arch.ID, a.Trigger.ID)
	require.NoError(t, err)
	require.Equal(t, domain.FireCancel, f.Step)
	require.Equal(t, "cancelled", b.status(t, a.Trigger.ID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1 AND message = $2`, arch.ID,
		fmt.Sprintf("[Trigger] wake-up #%d fired on an archived session: nothing to do", a.Trigger.ID)))

	// Failed: the delivery refuses; cancelled, and said.
	failed := b.sessionIn(t, domain.StatusNeedsInput)
	a = b.wakeIn(t, failed, time.Minute)
	_, err = b.sessions.Transition.Fire(ctx, strconv.FormatInt(failed.ID, 10), "fail", domain.Command{})
	require.NoError(t, err)
	f, err = fire.Handle(ctx, failed.ID, a.Trigger.ID)
	require.NoError(t, err)
	require.Equal(t, domain.FireCancel, f.Step)
	require.Equal(t, "cancelled", b.status(t, a.Trigger.ID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1 AND message LIKE '[Trigger] wake-up #% fired on a failed session%'`, failed.ID))
}

// TestWatcherFiresOncePerWatchedTransition: the armed watchers of a
// session that wait for the state it reaches become firing in that
// transition's commit, each announced due once; later transitions fire
// nothing more; an archive cancels the watchers left.
func TestWatcherFiresOncePerWatchedTransition(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	watched := b.sessionIn(t, domain.StatusRunning)
	wref := strconv.FormatInt(watched.ID, 10)
	onInput := b.sessionIn(t, domain.StatusNeedsInput)
	onFail := b.sessionIn(t, domain.StatusNeedsInput)
	onEither := b.sessionIn(t, domain.StatusWaiting)
	watch := func(s domain.Session, states ...string) domain.Trigger {
		tr, err := b.triggers.Watch(ctx, strconv.FormatInt(s.ID, 10), domain.WatchRequest{WatchedSessionID: watched.ID, States: states}, domain.Actor{})
		require.NoError(t, err)
		return tr.Trigger
	}
	wInput, wFail, wEither := watch(onInput, "needs_input"), watch(onFail, "failed"), watch(onEither, "archived", "needs_input")
	due := func() int {
		return b.count(t, `SELECT count(*) FROM outbox_messages WHERE topic = $1`, events.TopicTriggerDue)
	}

	_, err := b.sessions.Transition.Fire(ctx, wref, "pause", domain.Command{})
	require.NoError(t, err)
	require.Equal(t, "firing", b.status(t, wInput.ID))
	require.Equal(t, "firing", b.status(t, wEither.ID))
	require.Equal(t, "armed", b.status(t, wFail.ID))
	require.Equal(t, 2, due())
	_, err = b.sessions.Transition.Fire(ctx, wref, "resume", domain.Command{})
	require.NoError(t, err)
	_, err = b.sessions.Transition.Fire(ctx, wref, "pause", domain.Command{})
	require.NoError(t, err)
	require.Equal(t, 2, due(), "each watcher fires once")

	_, err = b.sessions.Transition.Fire(ctx, wref, "archive", domain.Command{})
	require.NoError(t, err)
	require.Equal(t, "cancelled", b.status(t, wFail.ID), "the archive cleans up the watchers left")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1 AND message = $2`, onFail.ID,
		fmt.Sprintf("[Trigger] watcher #%d cancelled: session #%d was archived", wFail.ID, watched.ID)))

	// The due watcher is delivered with its default prompt.
	f, err := b.fire.Handle(ctx, onInput.ID, wInput.ID)
	require.NoError(t, err)
	require.Equal(t, domain.FireDeliver, f.Step)
	require.Equal(t, fmt.Sprintf("[Zimmer] Session #%d is now needs_input.", watched.ID), f.Trigger.TurnPrompt())
	require.Equal(t, "fired", b.status(t, wInput.ID))
}

func TestAwaitingScheduledWakeInOneQuery(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	ahead := b.sessionIn(t, domain.StatusNeedsInput)
	b.wakeIn(t, ahead, time.Hour)
	watcher := b.sessionIn(t, domain.StatusNeedsInput)
	_, err := b.triggers.Watch(ctx, strconv.FormatInt(watcher.ID, 10), domain.WatchRequest{WatchedSessionID: ahead.ID, States: []string{"failed"}}, domain.Actor{})
	require.NoError(t, err)
	overdue := b.sessionIn(t, domain.StatusNeedsInput)
	b.wakeIn(t, overdue, time.Minute)
	nothing := b.sessionIn(t, domain.StatusWaiting)
	b.clock.Advance(2 * time.Minute)

	asleep, err := b.triggers.AwaitingScheduledWake(ctx, []int64{nothing.ID, overdue.ID, watcher.ID, ahead.ID, 424242, ahead.ID})
	require.NoError(t, err)
	require.Equal(t, []int64{watcher.ID, ahead.ID}, asleep, "an overdue wake is a stall, not sleep")
	_, err = b.triggers.AwaitingScheduledWake(ctx, make([]int64, app.MaxAwaitingIDs+1))
	require.Error(t, err)
}

// TestFirstStartWaitsForTheWake: a waiting session with a wake ahead gets
// no first start; once the wake is overdue (or cancelled), it may start.
func TestFirstStartWaitsForTheWake(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	s, err := b.sessions.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	ref := strconv.FormatInt(s.ID, 10)
	at := trigNow.Add(time.Hour)
	// An operator's wake_me_up_later: Pause Until refuses a session that
	// never started (issue 23 rule 4).
	_, err = b.triggers.WakeMeUpLater(ctx, ref, domain.WakeRequest{WakeAt: rfc(at)}, domain.Actor{})
	require.NoError(t, err)
	_, err = b.sessions.Transition.Fire(ctx, ref, "start", domain.Command{})
	var terr *domain.TransitionError
	require.ErrorAs(t, err, &terr)
	require.Contains(t, terr.Reason, "asleep until a wake-up at 2026-11-30T10:00:00Z")
	b.clock.Advance(time.Hour + time.Second)
	_, err = b.sessions.Transition.Fire(ctx, ref, "start", domain.Command{})
	require.NoError(t, err)
}

func TestRefreshPerState(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	refresh := func(s domain.Session) app.Refreshed {
		r, err := b.triggers.Refresh(ctx, strconv.FormatInt(s.ID, 10), domain.Actor{})
		require.NoError(t, err)
		return r
	}
	for _, st := range []domain.Status{domain.StatusFailed, domain.StatusWaiting} {
		r := refresh(b.sessionIn(t, st))
		require.True(t, r.Refreshed, "%s: %s", st, r.Message)
		require.Equal(t, domain.StatusRunning, r.Session.Status)
		require.True(t, r.Session.Markers.RunningJobID != "", "a turn is asked for")
	}
	for name, s := range map[string]domain.Session{
		"running":  b.sessionIn(t, domain.StatusRunning),
		"archived": b.sessionIn(t, domain.StatusArchived),
	} {
		r := refresh(s)
		require.False(t, r.Refreshed, name)
		require.Contains(t, r.Message, "is "+name, name)
	}
	never, err := b.sessions.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	r := refresh(never)
	require.False(t, r.Refreshed)
	require.Contains(t, r.Message, "never started")

	asleep := b.sessionIn(t, domain.StatusNeedsInput)
	a := b.wakeIn(t, asleep, time.Hour)
	r = refresh(asleep)
	require.False(t, r.Refreshed)
	require.Contains(t, r.Message, "asleep on purpose")
	require.Equal(t, "armed", b.status(t, a.Trigger.ID), "the refresh did not consume the wake")

	b.clock.Advance(2 * time.Hour)
	r = refresh(asleep)
	require.True(t, r.Refreshed, "an overdue wake is a stall: refresh rescues it")
	require.Equal(t, "cancelled", b.status(t, a.Trigger.ID))
}

func TestDeletingAWatchedSessionCancelsItsWatchers(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	watched := b.sessionIn(t, domain.StatusRunning)
	s := b.sessionIn(t, domain.StatusNeedsInput)
	tr, err := b.triggers.Watch(ctx, strconv.FormatInt(s.ID, 10), domain.WatchRequest{WatchedSessionID: watched.ID, States: []string{"failed"}}, domain.Actor{})
	require.NoError(t, err)
	require.NoError(t, b.sessions.Delete.Handle(ctx, strconv.FormatInt(watched.ID, 10)))
	require.Equal(t, "cancelled", b.status(t, tr.Trigger.ID))
	asleep, err := b.triggers.AwaitingScheduledWake(ctx, []int64{s.ID})
	require.NoError(t, err)
	require.Empty(t, asleep, "no watcher waits for a session that is gone")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1 AND message = $2`, s.ID,
		fmt.Sprintf("[Trigger] watcher #%d cancelled: session #%d was deleted", tr.Trigger.ID, watched.ID)))
}

// TestAWakeAsksANeverStartedSessionForItsFirstTurn: a Pause Until on a
// session that never started refuses its first start; when the wake fires
// the runner is asked for that first turn again, with the session's own
// prompt, in the commit that takes the wake out of the armed set (so that
// start passes the guard), while the wake's prompt waits for the turn to
// end. A session that ran gets no such request.
func TestAWakeAsksANeverStartedSessionForItsFirstTurn(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	firstTurns := func(sessionID int64) []*lifecyclev1.TurnRequest {
		t.Helper()
		rows, err := b.pool.Query(ctx, `SELECT payload FROM outbox_messages
			WHERE subscriber = $1 AND topic = $2 AND aggregate_key = $3 ORDER BY id`,
			events.SubscriberRunnerTurns, events.TopicSessionUpdated, strconv.FormatInt(sessionID, 10))
		require.NoError(t, err)
		payloads, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		require.NoError(t, err)
		var out []*lifecyclev1.TurnRequest
		for _, p := range payloads {
			msg, err := events.Decode(p)
			require.NoError(t, err)
			if turn := msg.GetUpdated().GetTurn(); turn.GetFirst() {
				require.Equal(t, sessionID, msg.GetUpdated().GetSession().GetId())
				out = append(out, turn)
			}
		}
		return out
	}

	s, err := b.sessions.Create.Handle(ctx, domain.NewSession{Prompt: "build the thing", GitRoot: "g"})
	require.NoError(t, err)
	ref := strconv.FormatInt(s.ID, 10)
	at := trigNow.Add(time.Hour)
	// An operator's wake_me_up_later: Pause Until refuses a session that
	// never started (issue 23 rule 4).
	a, err := b.triggers.WakeMeUpLater(ctx, ref, domain.WakeRequest{WakeAt: rfc(at), Prompt: "wake up"}, domain.Actor{})
	require.NoError(t, err)
	_, err = b.sessions.Transition.Fire(ctx, ref, "start", domain.Command{})
	var terr *domain.TransitionError
	require.ErrorAs(t, err, &terr, "the runner's first start is refused while the wake is ahead")
	require.Empty(t, firstTurns(s.ID))

	b.clock.Advance(time.Hour)
	fire := b.fire
	fire.Clock = b.clock
	f, err := fire.Handle(ctx, s.ID, a.Trigger.ID)
	require.NoError(t, err)
	require.Equal(t, domain.FireDeliver, f.Step)
	require.True(t, f.Queued, "the wake's prompt waits for the first turn to end")
	asked := firstTurns(s.ID)
	require.Len(t, asked, 1, "the runner is asked for the first turn again, once")
	require.Equal(t, "build the thing", asked[0].GetPrompt(), "with the session's own prompt")
	require.Empty(t, asked[0].GetJobId(), "the runner draws the first turn's job")
	_, err = b.sessions.Transition.Fire(ctx, ref, "start", domain.Command{})
	require.NoError(t, err, "the wake is no longer armed: the start passes its guard")

	ran := b.sessionIn(t, domain.StatusWaiting)
	a = b.wakeIn(t, ran, time.Minute)
	b.clock.Advance(time.Minute)
	f, err = fire.Handle(ctx, ran.ID, a.Trigger.ID)
	require.NoError(t, err)
	require.Equal(t, domain.FireDeliver, f.Step)
	require.Empty(t, firstTurns(ran.ID), "a session that ran is resumed by the wake's prompt, not started")
}

// rfc is t as RFC 3339 in UTC, a wake_at the one rule reads.
func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// TestBulkAsleepIsThePerSessionAnswer: issue 23 rule 6. The batch question
// "which of these are asleep" (AwaitingScheduledWake) and refresh's own
// reading under the lock agree on every kind of waiting session: a wake
// ahead or a watcher is asleep; an overdue wake, a cancelled one and none
// are a stall the refresh nudges.
func TestBulkAsleepIsThePerSessionAnswer(t *testing.T) {
	t.Parallel()
	b := trigSetup(t)
	ctx := context.Background()
	waitingWith := func(arm func(domain.Session)) domain.Session {
		s := b.sessionIn(t, domain.StatusNeedsInput)
		arm(s)
		return s
	}
	watched := b.sessionIn(t, domain.StatusRunning)
	sessions := map[string]domain.Session{
		"a wake ahead": waitingWith(func(s domain.Session) { b.wakeIn(t, s, 3*time.Hour) }),
		"overdue":      waitingWith(func(s domain.Session) { b.wakeIn(t, s, time.Hour) }),
		"a watcher": waitingWith(func(s domain.Session) {
			_, err := b.triggers.Watch(ctx, strconv.FormatInt(s.ID, 10),
				domain.WatchRequest{WatchedSessionID: watched.ID, States: []string{"failed"}}, domain.Actor{})
			require.NoError(t, err)
		}),
		"cancelled": waitingWith(func(s domain.Session) {
			a := b.wakeIn(t, s, 3*time.Hour)
			_, err := b.triggers.Cancel(ctx, strconv.FormatInt(s.ID, 10), a.Trigger.ID, "")
			require.NoError(t, err)
		}),
		"nothing": b.sessionIn(t, domain.StatusWaiting),
	}
	b.clock.Advance(2 * time.Hour) // "overdue" is past its wake, "a wake ahead" is not
	var ids []int64
	for _, s := range sessions {
		ids = append(ids, s.ID)
	}
	asleep, err := b.triggers.AwaitingScheduledWake(ctx, ids)
	require.NoError(t, err)
	for name, s := range sessions {
		r, err := b.triggers.Refresh(ctx, strconv.FormatInt(s.ID, 10), domain.Actor{})
		require.NoError(t, err, name)
		require.Equal(t, slices.Contains(asleep, s.ID), !r.Refreshed, "%s: the batch and the refresh disagree (%s)", name, r.Message)
		wantAsleep := name == "a wake ahead" || name == "a watcher"
		require.Equal(t, wantAsleep, !r.Refreshed, "%s: %s", name, r.Message)
	}
}
