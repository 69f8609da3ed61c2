package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
)

// replica is another process's repository over the same database: only
// Postgres (the session's row lock) keeps the two apart.
func (b testBundle) replica() app.Sessions {
	return app.NewSessions(store.NewSessions(b.pool, events.Codec{}, nil, slogx.Discard()), clock.System{}, app.DefaultTrashRetention)
}

func fire(t *testing.T, s app.Sessions, id int64, e domain.Event, cmd domain.Command) (domain.Outcome, error) {
	t.Helper()
	return s.Transition.Handle(context.Background(), strconv.FormatInt(id, 10), app.Verb(e), cmd)
}

// TestStaleStateIsNeverWritten: a process decides from the state under the
// row lock, so another process's write, or a wake-up armed behind its back,
// is always seen: it never applies or refuses from a state that is gone.
func TestStaleStateIsNeverWritten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, other := b.sessions, b.replica()
	ctx := context.Background()
	s, err := a.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g", Slug: "stale"})
	require.NoError(t, err)
	_, err = fire(t, a, s.ID, domain.EventStart, domain.Command{})
	require.NoError(t, err)

	// The other process pauses it; a still remembers it running.
	_, err = fire(t, other, s.ID, domain.EventPause, domain.Command{})
	require.NoError(t, err)

	_, err = fire(t, a, s.ID, domain.EventBlockOnElicitation, domain.Command{})
	var refused *domain.TransitionError
	require.ErrorAs(t, err, &refused, "block needs running; the session is needs_input now")
	require.Equal(t, domain.StatusNeedsInput, refused.From, "the refusal names the current state, not the remembered one")

	// A wake-up armed behind a's back changes what a system-recovery
	// resume decides, so it must be seen.
	_, err = b.pool.Exec(ctx, `INSERT INTO wake_triggers (session_id, kind, fire_at) VALUES ($1, 'one_time', now() + interval '1 hour')`, s.ID)
	require.NoError(t, err)
	out, err := a.Transition.Handle(ctx, "stale", app.Verb(domain.EventResume), domain.Command{SystemRecovery: true})
	require.NoError(t, err)
	require.True(t, out.Session.Markers.PendingSleep, "the armed one-time wake was read")

	got, err := a.Get.Handle(ctx, "stale")
	require.NoError(t, err)
	require.Equal(t, domain.StatusRunning, got.Status)
	require.EqualValues(t, 1+3+1, got.Version, "created, three transitions, one wake armed")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1 AND kind = 'refusal'`, s.ID))
}

// TestTwoProcessesRacingOneSession fires random events at one session from
// two processes at once. Every success is one committed version, and every
// applied event left exactly one timeline line and one stream entry.
func TestTwoProcessesRacingOneSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	procs := []app.Sessions{b.sessions, b.replica()}
	ctx := context.Background()
	s, err := procs[0].Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	evs := []domain.Event{domain.EventStart, domain.EventPause, domain.EventResume, domain.EventFail,
		domain.EventArchive, domain.EventUnarchiveToWaiting, domain.EventBlockOnElicitation, domain.EventUnblockFromElicitation}

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		applied  int
		failures []error
	)
	for i := range 60 {
		wg.Go(func() {
			ev := evs[rand.IntN(len(evs))]
			out, err := fire(t, procs[i%2], s.ID, ev, domain.Command{})
			mu.Lock()
			defer mu.Unlock()
			var refused *domain.TransitionError
			switch {
			case err == nil:
				applied += len(out.Applied)
			case !errors.As(err, &refused):
				failures = append(failures, fmt.Errorf("%s: %w", ev, err))
			}
		})
	}
	wg.Wait()
	assert.Empty(t, failures, "only refusals may fail")

	got, err := procs[1].Get.Handle(ctx, strconv.FormatInt(s.ID, 10))
	require.NoError(t, err)
	require.EqualValues(t, 1+applied, got.Version, "one committed version per applied event")
	require.Equal(t, applied, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1 AND kind = 'transition'`, s.ID))
	stream, err := procs[0].History.Events(ctx, strconv.FormatInt(s.ID, 10))
	require.NoError(t, err)
	var transitions int
	last := domain.StatusWaiting.String()
	for _, e := range stream {
		if e.Name == "transition" {
			transitions++
			// A decision from a stale state would start where the
			// previous transition did not end.
			require.Equal(t, last, e.Payload["from"], "transition %d starts where the one before it ended", transitions)
			last = e.Payload["to"].(string)
		}
	}
	require.Equal(t, applied, transitions)
	require.Equal(t, got.Status.String(), last)
}

// TestFlagsFailureNeverStopsTheTransition: recording the experimental
// flags is bookkeeping.
func TestFlagsFailureNeverStopsTheTransition(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `ALTER TABLE session_experimental_flags ADD CONSTRAINT refuse_all CHECK (false)`)
	require.NoError(t, err)
	s, err := b.sessions.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	out, err := fire(t, b.sessions, s.ID, domain.EventStart, domain.Command{})
	require.NoError(t, err)
	require.Equal(t, domain.StatusRunning, out.Session.Status)
	require.Zero(t, b.count(t, `SELECT count(*) FROM session_experimental_flags WHERE session_id = $1`, s.ID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1`, s.ID))
}

// TestStreamOutlivesTheOutbox: the event stream is written with the
// transition into its own table, so it reads the same once the outbox has
// been pruned of the delivered events.
func TestStreamOutlivesTheOutbox(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	s, err := b.sessions.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g", Title: "t"})
	require.NoError(t, err)
	ref := strconv.FormatInt(s.ID, 10)
	_, err = fire(t, b.sessions, s.ID, domain.EventStart, domain.Command{})
	require.NoError(t, err)
	_, err = fire(t, b.sessions, s.ID, domain.EventPause, domain.Command{})
	require.NoError(t, err)

	before, err := b.sessions.History.Events(ctx, ref)
	require.NoError(t, err)
	var names []string
	for _, e := range before {
		names = append(names, e.Name)
	}
	name := events.Codec{}.EffectName
	require.Equal(t, []string{
		"transition", name(domain.RecordFlags{}),
		// The category is still pending (a title alone is not enough).
		"transition", name(domain.FireTriggers{}), name(domain.NeedsInputPush{}), name(domain.Inference{}),
		name(domain.StatusSummaryRefresh{}), name(domain.Drain{}),
	}, names)
	require.Equal(t, map[string]any{"from": "running", "to": "needs_input", "events": []any{"pause"}}, before[2].Payload)
	require.Equal(t, map[string]any{"needs_input_count": float64(1)}, before[4].Payload)
	require.True(t, before[7].Alerting, "a lost drain alerts on failure")
	require.Equal(t, before[0].EventID, before[1].EventID, "an effect lifecycle carries out itself rides on its transition's event")
	require.Equal(t, before[2].EventID, before[3].EventID, "firing triggers is lifecycle's own, in the transition")
	require.NotEqual(t, before[2].EventID, before[4].EventID, "an owned effect has its own event")

	_, err = b.pool.Exec(ctx, `DELETE FROM outbox_messages`)
	require.NoError(t, err)
	after, err := b.sessions.History.Events(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// TestARetriedTransitionWithItsKeyIsANoOp: a transition fired with an
// idempotency key is recorded with its change, so the same call again — a
// retried activity whose first attempt committed and lost its answer — is
// answered as already applied and changes nothing, even after the session
// moved on; a call with another key is decided afresh, and refused as
// before; a key names one transition.
func TestARetriedTransitionWithItsKeyIsANoOp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	s, err := b.sessions.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	ref := strconv.FormatInt(s.ID, 10)
	start := domain.Command{RunningJobID: "session-1/turn-1", IdempotencyKey: "session-1/run-a/1/start"}
	pause := domain.Command{IdempotencyKey: "session-1/run-a/2/pause"}

	out, err := b.sessions.Transition.Fire(ctx, ref, string(domain.EventStart), start)
	require.NoError(t, err)
	require.False(t, out.AlreadyApplied)
	_, err = b.sessions.Transition.Fire(ctx, ref, string(domain.EventPause), pause)
	require.NoError(t, err)
	lines := b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1`, s.ID)
	announced := b.count(t, `SELECT count(*) FROM session_events WHERE session_id = $1`, s.ID)

	for _, retry := range []struct {
		event domain.Event
		cmd   domain.Command
		from  domain.Status
	}{{domain.EventStart, start, domain.StatusWaiting}, {domain.EventPause, pause, domain.StatusRunning}} {
		again, err := b.sessions.Transition.Fire(ctx, ref, string(retry.event), retry.cmd)
		require.NoError(t, err, "%s's retry is answered, not refused", retry.event)
		require.True(t, again.AlreadyApplied, retry.event)
		require.Equal(t, retry.from, again.From, "the state the first call moved it from")
		require.Equal(t, domain.StatusNeedsInput, again.Session.Status, "the session as it stands")
	}
	got, err := b.sessions.Get.Handle(ctx, ref)
	require.NoError(t, err)
	require.EqualValues(t, 1+2, got.Version, "created and two transitions: the retries changed nothing")
	require.Equal(t, domain.StatusNeedsInput, got.Status)
	require.Equal(t, lines, b.count(t, `SELECT count(*) FROM session_timeline WHERE session_id = $1`, s.ID), "no line, not even a refusal")
	require.Equal(t, announced, b.count(t, `SELECT count(*) FROM session_events WHERE session_id = $1`, s.ID), "nothing announced")

	_, err = b.sessions.Transition.Fire(ctx, ref, string(domain.EventPause), domain.Command{IdempotencyKey: "session-1/run-a/3/pause"})
	var refused *domain.TransitionError
	require.ErrorAs(t, err, &refused, "another key is another pause: refused from needs_input, as before")
	require.Equal(t, domain.StatusNeedsInput, refused.From)

	_, err = b.sessions.Transition.Fire(ctx, ref, string(domain.EventFail), domain.Command{IdempotencyKey: start.IdempotencyKey, FailureReason: "x"})
	require.ErrorIs(t, err, domain.ErrPrecondition, "a key names one transition")
	other, err := b.sessions.Create.Handle(ctx, domain.NewSession{Prompt: "p", GitRoot: "g"})
	require.NoError(t, err)
	_, err = b.sessions.Transition.Fire(ctx, strconv.FormatInt(other.ID, 10), string(domain.EventStart), start)
	require.ErrorIs(t, err, domain.ErrPrecondition, "of one session")

	n, err := store.NewSessions(b.pool, events.Codec{}, nil, slogx.Discard()).PruneDeliveries(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "the two records go with the deliveries' retention")
}
