package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// fields returns the fields a validation error or a wake refusal names,
// or nil.
func fields(t *testing.T, err error) []string {
	t.Helper()
	var (
		verr *validation.Error
		wake *domain.WakeRefusal
	)
	if errors.As(err, &wake) {
		return []string{wake.Field}
	}
	if !errors.As(err, &verr) {
		return nil
	}
	var out []string
	for _, v := range verr.Violations {
		out = append(out, v.Field)
	}
	return out
}

func TestWakeRequestFireAt(t *testing.T) {
	t.Parallel()
	at := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339) }
	tests := []struct {
		name   string
		req    domain.WakeRequest
		want   time.Time
		fields []string
		reason string
	}{
		{name: "wake_at ahead", req: domain.WakeRequest{WakeAt: at(time.Hour)}, want: now.Add(time.Hour)},
		{name: "exactly the grace", req: domain.WakeRequest{WakeAt: at(domain.WakeGrace)}, want: now.Add(domain.WakeGrace)},
		{name: "delay 90s", req: domain.WakeRequest{Delay: "90s", DelayAllowed: true}, want: now.Add(90 * time.Second)},
		{name: "delay 15m", req: domain.WakeRequest{Delay: "15m", DelayAllowed: true}, want: now.Add(15 * time.Minute)},
		{name: "delay 2h", req: domain.WakeRequest{Delay: " 2h ", DelayAllowed: true}, want: now.Add(2 * time.Hour)},
		{name: "past", req: domain.WakeRequest{WakeAt: at(-time.Second)}, fields: []string{"wake_at"}, reason: "in the past"},
		{name: "now", req: domain.WakeRequest{WakeAt: at(0)}, fields: []string{"wake_at"}, reason: "in the past"},
		{name: "inside the grace", req: domain.WakeRequest{WakeAt: at(29 * time.Second)}, fields: []string{"wake_at"}, reason: "grace window"},
		{name: "delay inside the grace", req: domain.WakeRequest{Delay: "29s", DelayAllowed: true}, fields: []string{"delay"}, reason: "grace window"},
		{name: "both", req: domain.WakeRequest{WakeAt: at(time.Hour), Delay: "1h", DelayAllowed: true}, fields: []string{"wake_at", "delay"}, reason: "exactly one"},
		{name: "neither", req: domain.WakeRequest{DelayAllowed: true}, fields: []string{"wake_at"}, reason: "or give delay"},
		{name: "neither, pause until", req: domain.WakeRequest{}, fields: []string{"wake_at"}, reason: "is required"},
		{name: "delay where none is taken", req: domain.WakeRequest{Delay: "1h"}, fields: []string{"delay"}, reason: "not taken"},
		{name: "not a duration", req: domain.WakeRequest{Delay: "soon", DelayAllowed: true}, fields: []string{"delay"}, reason: "not a duration"},
		{name: "a bare number", req: domain.WakeRequest{Delay: "90", DelayAllowed: true}, fields: []string{"delay"}, reason: "not a duration"},
		{name: "negative", req: domain.WakeRequest{Delay: "-5m", DelayAllowed: true}, fields: []string{"delay"}, reason: "positive"},
		{name: "too far", req: domain.WakeRequest{Delay: "9000h", DelayAllowed: true}, fields: []string{"delay"}, reason: "is more than 366 days ahead"},
		{name: "too far at", req: domain.WakeRequest{WakeAt: at(9000 * time.Hour)}, fields: []string{"wake_at"}, reason: "is more than 366 days ahead"},
		{name: "long prompt", req: domain.WakeRequest{WakeAt: at(time.Hour), Prompt: strings.Repeat("x", domain.MaxPromptChars+1)}, fields: []string{"prompt"}},
		{name: "blank prompt", req: domain.WakeRequest{WakeAt: at(time.Hour), Prompt: "\n\r\t"}, fields: []string{"prompt"}, reason: "missing_prompt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.req.FireAt(now)
			if tc.fields == nil {
				require.NoError(t, err)
				require.Equal(t, tc.want, got.At)
				require.Equal(t, "UTC", got.Timezone)
				return
			}
			require.Equal(t, tc.fields, fields(t, err), "%v", err)
			var wake *domain.WakeRefusal
			if errors.As(err, &wake) {
				require.Contains(t, wake.Code+": "+err.Error(), tc.reason)
				return
			}
			require.Contains(t, err.Error(), tc.reason)
		})
	}
}

func TestWatchRequestValidate(t *testing.T) {
	t.Parallel()
	states, err := domain.WatchRequest{WatchedSessionID: 9, States: []string{"failed", "needs_input", "failed"}}.Validate(5)
	require.NoError(t, err)
	require.Equal(t, []domain.Status{domain.StatusFailed, domain.StatusNeedsInput}, states, "duplicates once, in the order given")

	for name, tc := range map[string]struct {
		req    domain.WatchRequest
		fields []string
	}{
		"itself":          {domain.WatchRequest{WatchedSessionID: 5, States: []string{"failed"}}, []string{"watched_session_id"}},
		"no watched":      {domain.WatchRequest{States: []string{"failed"}}, []string{"watched_session_id"}},
		"negative":        {domain.WatchRequest{WatchedSessionID: -3, States: []string{"failed"}}, []string{"watched_session_id"}},
		"no states":       {domain.WatchRequest{WatchedSessionID: 9}, []string{"states"}},
		"running":         {domain.WatchRequest{WatchedSessionID: 9, States: []string{"running"}}, []string{"states"}},
		"waiting":         {domain.WatchRequest{WatchedSessionID: 9, States: []string{"needs_input", "waiting"}}, []string{"states"}},
		"unknown":         {domain.WatchRequest{WatchedSessionID: 9, States: []string{"done"}}, []string{"states"}},
		"long prompt":     {domain.WatchRequest{WatchedSessionID: 9, States: []string{"failed"}, Prompt: strings.Repeat("x", domain.MaxPromptChars+1)}, []string{"prompt"}},
		"blank prompt":    {domain.WatchRequest{WatchedSessionID: 9, States: []string{"failed"}, Prompt: " "}, []string{"prompt"}},
		"all bad at once": {domain.WatchRequest{WatchedSessionID: 5}, []string{"watched_session_id", "states"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.req.Validate(5)
			require.Equal(t, tc.fields, fields(t, err), "%v", err)
		})
	}
}

// TestArmWakeFromEachState: needs_input sleeps now, waiting stays asleep,
// running sleeps at its turn's end (or now, for a halted Pause Until);
// failed and archived are refused.
func TestArmWakeFromEachState(t *testing.T) {
	t.Parallel()
	wake := domain.Trigger{ID: 41, SessionID: 5, Kind: domain.KindOneTime, FireAt: now.Add(time.Hour), Source: domain.SourceWakeMeUpLater}
	line := "[Trigger] wake-up #41 armed for 2026-11-30T13:00:00 (UTC) (wake_me_up_later)"

	out, err := domain.ArmWake(session(domain.StatusNeedsInput), wake, nil, false, domain.Command{}, env())
	require.NoError(t, err)
	require.Equal(t, domain.StatusWaiting, out.Session.Status)
	require.Equal(t, []domain.Event{domain.EventSleep}, out.Applied)
	require.Equal(t, line, out.Timeline[len(out.Timeline)-1].Message)

	out, err = domain.ArmWake(session(domain.StatusWaiting), wake, nil, false, domain.Command{}, env())
	require.NoError(t, err)
	require.Equal(t, domain.StatusWaiting, out.Session.Status)
	require.Empty(t, out.Applied)
	require.Empty(t, out.Effects)
	require.Equal(t, []domain.TimelineEntry{{Kind: domain.TimelineNote, Message: line}}, out.Timeline)

	out, err = domain.ArmWake(session(domain.StatusRunning), wake, nil, false, domain.Command{}, env())
	require.NoError(t, err)
	require.Equal(t, domain.StatusRunning, out.Session.Status)
	require.True(t, out.Session.Markers.PendingSleep, "sleeps when its turn ends")
	require.False(t, out.Session.Markers.PendingSleepRequiresWake, "a deliberate sleep")

	running := session(domain.StatusRunning)
	running.Markers.RunningJobID = "job-1"
	out, err = domain.ArmWake(running, wake, nil, true, domain.Command{}, env())
	require.NoError(t, err)
	require.Equal(t, domain.StatusWaiting, out.Session.Status, "Pause Until halted the turn: paused and asleep now")
	require.Equal(t, []domain.Event{domain.EventPause, domain.EventSleep}, out.Applied)
	require.Equal(t, "user", out.Session.Markers.PausedBy)
	require.False(t, out.Session.Markers.PendingSleep)
	require.Empty(t, out.Session.Markers.RunningJobID)

	for _, st := range []domain.Status{domain.StatusFailed, domain.StatusArchived} {
		_, err := domain.ArmWake(session(st), wake, nil, false, domain.Command{}, env())
		var refused *domain.WakeRefusal
		require.ErrorAs(t, err, &refused, "%s", st)
		require.Equal(t, domain.RefusedNotWakeable, refused.Code)
		require.True(t, refused.StateRefusal())
		require.Contains(t, err.Error(), "is "+st.String())
		require.Contains(t, err.Error(), "only needs_input, running and waiting")
		needs := domain.StatusNeedsInput
		_, err = domain.ArmWatch(session(st), domain.Trigger{ID: 1, Kind: domain.KindSessionState}, &needs, domain.Command{}, env())
		require.ErrorAs(t, err, &refused, "%s", st)
	}
}

// TestWakesCountOnlyWhatIsAhead: asleep on purpose is a one-time wake still
// ahead, or any armed watcher; an overdue one-time wake is a stall, and
// the first start's guard follows the same reading.
func TestWakesCountOnlyWhatIsAhead(t *testing.T) {
	t.Parallel()
	ahead := domain.Wakes{OneTime: 1, LatestOneTime: now.Add(time.Second)}
	overdue := domain.Wakes{OneTime: 1, LatestOneTime: now}
	watcher := domain.Wakes{Watchers: 1}
	require.True(t, ahead.Asleep(now))
	require.False(t, overdue.Asleep(now), "an overdue wake is a stall, not sleep")
	require.True(t, watcher.Asleep(now))
	require.False(t, domain.Wakes{}.Asleep(now))

	s := session(domain.StatusWaiting)
	e := env()
	e.Wakes = ahead
	_, err := domain.Apply(s, domain.Command{Event: domain.EventStart}, e)
	var terr *domain.TransitionError
	require.ErrorAs(t, err, &terr)
	require.Contains(t, terr.Reason, "asleep until a wake-up at 2026-11-30T12:00:01Z")
	for _, w := range []domain.Wakes{overdue, watcher, {}} {
		e.Wakes = w
		_, err := domain.Apply(s, domain.Command{Event: domain.EventStart}, e)
		require.NoError(t, err, "%+v: only a wake still ahead refuses a first start", w)
	}
	// A resume (a wake's own delivery, a restart) is never guarded.
	e.Wakes = ahead
	_, err = domain.Apply(s, domain.Command{Event: domain.EventResume}, e)
	require.NoError(t, err)
}

func TestWatchesFired(t *testing.T) {
	t.Parallel()
	watching := []domain.Watch{
		{TriggerID: 1, SessionID: 7, States: []domain.Status{domain.StatusNeedsInput}},
		{TriggerID: 2, SessionID: 8, States: []domain.Status{domain.StatusFailed, domain.StatusArchived}},
		{TriggerID: 3, SessionID: 9, States: []domain.Status{domain.StatusArchived, domain.StatusNeedsInput}},
	}
	fire := func(name string) domain.FireTriggers {
		return domain.FireTriggers{Trigger: name}
	}
	st, fired := domain.WatchesFired(fire("session_needs_input"), watching)
	require.Equal(t, domain.StatusNeedsInput, st)
	require.Equal(t, []domain.Watch{watching[0], watching[2]}, fired)
	_, fired = domain.WatchesFired(fire("session_failed"), watching)
	require.Equal(t, []domain.Watch{watching[1]}, fired)
	_, fired = domain.WatchesFired(fire("session_archived"), watching)
	require.Equal(t, []domain.Watch{watching[1], watching[2]}, fired)
	_, fired = domain.WatchesFired(fire("session_running"), watching)
	require.Empty(t, fired)
}

// TestFiring: never early; a trigger no longer armed fires into nothing; a
// retry after the first step delivers again; an archived session gets
// nothing, and says so.
func TestFiring(t *testing.T) {
	t.Parallel()
	wake := domain.Trigger{ID: 3, SessionID: 5, Kind: domain.KindOneTime, FireAt: now, Status: domain.TriggerArmed}

	early := wake
	early.FireAt = now.Add(time.Millisecond)
	_, err := domain.StartFiring(session(domain.StatusWaiting), early, now)
	require.ErrorIs(t, err, domain.ErrEarly)

	f, err := domain.StartFiring(session(domain.StatusWaiting), wake, now)
	require.NoError(t, err)
	require.Equal(t, domain.FireDeliver, f.Step)
	require.True(t, f.Write)
	require.Equal(t, domain.TriggerFiring, f.Trigger.Status)

	retry, err := domain.StartFiring(session(domain.StatusWaiting), f.Trigger, now)
	require.NoError(t, err)
	require.Equal(t, domain.FireDeliver, retry.Step, "a retry delivers again (idempotently)")
	require.False(t, retry.Write)

	for _, st := range []domain.TriggerStatus{domain.TriggerCancelled, domain.TriggerFired} {
		gone := wake
		gone.Status = st
		f, err := domain.StartFiring(session(domain.StatusWaiting), gone, now)
		require.NoError(t, err)
		require.Equal(t, domain.FireNothing, f.Step, "%s", st)
		require.False(t, f.Write)
	}

	f, err = domain.StartFiring(session(domain.StatusArchived), wake, now)
	require.NoError(t, err)
	require.Equal(t, domain.FireCancel, f.Step)
	require.Equal(t, domain.TriggerCancelled, f.Trigger.Status)
	require.Equal(t, "[Trigger] wake-up #3 fired on an archived session: nothing to do", f.Timeline[0].Message)

	running := session(domain.StatusRunning)
	running.Markers.PendingSleep = true
	f, err = domain.StartFiring(running, wake, now)
	require.NoError(t, err)
	require.True(t, f.Session.Markers.PendingSleepRequiresWake,
		"the wake fired mid-turn: sleep after the turn only if something is still armed")

	require.False(t, f.AsksFirstTurn, "a session that ran is not started again")

	// Never started, its first start refused while the wake was ahead: the
	// wake asks for that first turn again (a watcher never held it back).
	never := session(domain.StatusWaiting)
	never.Prompt = "build it"
	f, err = domain.StartFiring(never, wake, now)
	require.NoError(t, err)
	require.True(t, f.AsksFirstTurn)
	watcher := wake
	watcher.Kind, watcher.FireAt = domain.KindSessionState, time.Time{}
	f, err = domain.StartFiring(never, watcher, now)
	require.NoError(t, err)
	require.False(t, f.AsksFirstTurn)
	ran := never
	ran.ElapsedSince = &now
	f, err = domain.StartFiring(ran, wake, now)
	require.NoError(t, err)
	require.False(t, f.AsksFirstTurn, "started before")
	retried, err := domain.StartFiring(never, f.Trigger, now)
	require.NoError(t, err)
	require.False(t, retried.AsksFirstTurn, "a retry finds it firing: asked in the first step's commit already")

	done := domain.FinishFiring(session(domain.StatusRunning), retry.Trigger, now, true)
	require.Equal(t, domain.TriggerFired, done.Trigger.Status)
	require.Equal(t, "[Trigger] wake-up #3 fired: its prompt was queued behind the running turn", done.Timeline[0].Message)
}

func TestTurnPrompt(t *testing.T) {
	t.Parallel()
	require.Equal(t, domain.DefaultWakePrompt, domain.Trigger{Kind: domain.KindOneTime}.TurnPrompt())
	require.Equal(t, "go on", domain.Trigger{Kind: domain.KindOneTime, Prompt: "go on"}.TurnPrompt())
	require.Equal(t, domain.DefaultWakePrompt, domain.Trigger{Kind: domain.KindOneTime, Prompt: " \n\t"}.TurnPrompt(),
		"a blank prompt armed before blank prompts were refused is the standard nudge")
	failed := domain.StatusFailed
	require.Equal(t, "[Zimmer] Session #12 is now failed.",
		domain.Trigger{Kind: domain.KindSessionState, WatchedSessionID: 12, FiredState: &failed}.TurnPrompt())
	require.Equal(t, "session/5/wake/3", domain.Trigger{ID: 3, SessionID: 5}.WorkflowID())
}

func TestCancelTrigger(t *testing.T) {
	t.Parallel()
	armed := domain.Trigger{ID: 3, Kind: domain.KindSessionState, Status: domain.TriggerArmed}
	got, line, err := domain.CancelTrigger(armed, now, "operator key …abcd")
	require.NoError(t, err)
	require.Equal(t, domain.TriggerCancelled, got.Status)
	require.Equal(t, now, *got.CancelledAt)
	require.Contains(t, line.Message, "[Trigger] watcher #3 cancelled")
	_, _, err = domain.CancelTrigger(got, now, "")
	require.ErrorIs(t, err, domain.ErrNotFound, "cancelling a cancelled trigger is NotFound")
}

func TestRefresh(t *testing.T) {
	t.Parallel()
	ran := func(st domain.Status) domain.Session {
		s := session(st)
		s.ElapsedSince = &now
		return s
	}
	for _, st := range []domain.Status{domain.StatusFailed, domain.StatusWaiting} {
		out, why, err := domain.Refresh(ran(st), false, domain.Command{}, env())
		require.NoError(t, err)
		require.Empty(t, why, "%s", st)
		require.Equal(t, []domain.Event{domain.EventResume}, out.Applied)
		require.True(t, out.AsksForTurn, "the continue nudge is a turn")
		require.Empty(t, out.TurnPrompt)
		require.Equal(t, false, out.Effects[len(out.Effects)-1].(domain.CancelWakes).Preserve, "a deliberate resume")
	}
	blocked := ran(domain.StatusNeedsInput)
	blocked.Markers.BlockedOnElicitation = true
	never := session(domain.StatusWaiting)
	for name, tc := range map[string]struct {
		s      domain.Session
		asleep bool
		reason string
	}{
		"running":     {ran(domain.StatusRunning), false, "is running"},
		"needs_input": {ran(domain.StatusNeedsInput), false, "starts no turn"},
		"archived":    {ran(domain.StatusArchived), false, "is archived"},
		"never":       {never, false, "never started"},
		"asleep":      {ran(domain.StatusWaiting), true, "asleep on purpose"},
		"elicitation": {blocked, false, "blocked on an MCP elicitation"},
	} {
		out, why, err := domain.Refresh(tc.s, tc.asleep, domain.Command{}, env())
		require.NoError(t, err, name)
		require.Contains(t, why, tc.reason, name)
		require.Empty(t, out.Applied, name)
	}
	// Asleep matters only to a waiting session: a failed one with a
	// watcher left armed is restarted all the same.
	_, why, err := domain.Refresh(ran(domain.StatusFailed), true, domain.Command{}, env())
	require.NoError(t, err)
	require.Empty(t, why)
}

// TestBulkRefresh: the bulk controls ("Refresh all") continue a
// needs_input session too, unless a person paused it by hand; for every
// other state the rule is the per-card one.
func TestBulkRefresh(t *testing.T) {
	t.Parallel()
	bulk := domain.Command{Actor: domain.Actor{Kind: domain.ActorWebUI, Bulk: true}}
	ran := func(st domain.Status, pausedBy string) domain.Session {
		s := session(st)
		s.ElapsedSince = &now
		s.Markers.PausedBy = pausedBy
		return s
	}
	for _, pausedBy := range []string{"", rules.PausedByRecovery} {
		out, why, err := domain.Refresh(ran(domain.StatusNeedsInput, pausedBy), false, bulk, env())
		require.NoError(t, err)
		require.Empty(t, why, "paused by %q", pausedBy)
		require.Equal(t, []domain.Event{domain.EventResume}, out.Applied)
		require.True(t, out.AsksForTurn)
	}
	out, why, err := domain.Refresh(ran(domain.StatusNeedsInput, rules.PausedByUser), false, bulk, env())
	require.NoError(t, err)
	require.Contains(t, why, "paused by hand")
	require.Empty(t, out.Applied)
	for name, tc := range map[string]struct {
		s      domain.Session
		asleep bool
		reason string
	}{
		"running":  {ran(domain.StatusRunning, ""), false, "is running"},
		"archived": {ran(domain.StatusArchived, ""), false, "is archived"},
		"never":    {session(domain.StatusWaiting), false, "never started"},
		"asleep":   {ran(domain.StatusWaiting, ""), true, "asleep on purpose"},
	} {
		out, why, err := domain.Refresh(tc.s, tc.asleep, bulk, env())
		require.NoError(t, err, name)
		require.Contains(t, why, tc.reason, name)
		require.Empty(t, out.Applied, name)
	}
}
