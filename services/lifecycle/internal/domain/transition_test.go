package domain_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func env() domain.Env {
	return domain.Env{Now: now, TrashRetention: 96 * time.Hour}
}

func session(st domain.Status) domain.Session {
	return domain.Session{ID: 5, Status: st, GitRoot: "g", Title: "t", CustomMetadata: map[string]any{}}
}

// effectNames names the kinds of the effects an outcome requested, in
// order.
func effectNames(o domain.Outcome) []string { return kinds(o.Effects...) }

// kinds names the kinds of effects.
func kinds(effects ...domain.Effect) []string {
	var names []string
	for _, e := range effects {
		names = append(names, fmt.Sprintf("%T", e))
	}
	return names
}

// TestEveryStateEventPair drives each of the 5×11 pairs: the spec's machine
// allows exactly these, and a refusal changes nothing and names the event
// and the state.
func TestEveryStateEventPair(t *testing.T) {
	t.Parallel()
	W, R, N, A, F := domain.StatusWaiting, domain.StatusRunning, domain.StatusNeedsInput, domain.StatusArchived, domain.StatusFailed
	allowed := map[domain.Event]map[domain.Status]domain.Status{
		domain.EventStart:                  {W: R},
		domain.EventPause:                  {R: N},
		domain.EventResume:                 {W: R, N: R, F: R},
		domain.EventSleep:                  {N: W},
		domain.EventBlockOnElicitation:     {R: N},
		domain.EventUnblockFromElicitation: {N: R},
		domain.EventFail:                   {W: F, R: F, N: F},
		domain.EventArchive:                {W: A, R: A, N: A, F: A},
		domain.EventUnarchiveToWaiting:     {A: W},
		domain.EventUnarchiveToFailed:      {A: F},
		domain.EventUnarchiveToNeedsInput:  {A: N},
	}
	require.Len(t, allowed, len(domain.Events))
	for _, ev := range domain.Events {
		for _, st := range domain.Statuses {
			t.Run(fmt.Sprintf("%s from %s", ev, st), func(t *testing.T) {
				t.Parallel()
				s := session(st)
				s.Markers.BlockedOnElicitation = true // satisfy unblock's guard; tested separately
				out, err := domain.Apply(s, domain.Command{Event: ev}, env())
				to, ok := allowed[ev][st]
				if !ok {
					var terr *domain.TransitionError
					require.ErrorAs(t, err, &terr)
					require.Equal(t, ev, terr.Event)
					require.Equal(t, st, terr.From)
					require.Contains(t, err.Error(), string(ev))
					require.Contains(t, err.Error(), "it is "+st.String())
					require.Empty(t, out.Timeline, "a refusal changes nothing")
					return
				}
				require.NoError(t, err)
				require.Equal(t, st, out.From)
				require.Equal(t, to, out.Session.Status)
				require.Equal(t, ev, out.Applied[0])
				if ev == domain.EventArchive {
					require.Contains(t, out.Timeline[0].Message, "Session moved to trash by")
				} else {
					require.Contains(t, out.Timeline[0].Message, fmt.Sprintf("%s → %s (%s)", st, to, ev))
				}
				var lines int
				for _, l := range out.Timeline {
					if l.Kind == domain.TimelineTransition {
						lines++
					}
				}
				require.Equal(t, len(out.Applied), lines, "one timeline line per applied transition")
				// The store writes a transition's own columns and no others.
				require.Empty(t, cmp.Diff(withoutLifecycleColumns(s), withoutLifecycleColumns(out.Session)),
					"a transition changed a column it does not own")
			})
		}
	}
}

func withoutLifecycleColumns(s domain.Session) domain.Session {
	s.Status, s.Markers, s.UpdatedAt = 0, domain.Markers{}, time.Time{}
	s.ElapsedSince, s.ArchivedAt, s.ArchivedFrom, s.TrashAfter = nil, nil, nil, nil
	return s
}

func TestGuards(t *testing.T) {
	t.Parallel()

	s := session(domain.StatusWaiting)
	s.GitRoot = ""
	_, err := domain.Apply(s, domain.Command{Event: domain.EventStart}, env())
	require.ErrorContains(t, err, "no git_root")

	_, err = domain.Apply(session(domain.StatusNeedsInput), domain.Command{Event: domain.EventUnblockFromElicitation}, env())
	require.ErrorContains(t, err, "not blocked on an elicitation")

	_, err = domain.ParseEvent("explode")
	require.ErrorContains(t, err, "use one of start, pause")
	_, err = domain.ParseEvent("")
	require.EqualError(t, err, "is required: one of start, pause, resume, sleep, block_on_elicitation, unblock_from_elicitation, "+
		"fail, archive, unarchive_to_waiting, unarchive_to_failed, unarchive_to_needs_input")
}

func TestPausePerformsTheEightStepsInOrder(t *testing.T) {
	t.Parallel()
	s := session(domain.StatusRunning)
	s.Title = ""
	s.Goal = "open a pull request"
	s.Markers.RunningJobID = "job-1"
	s.Markers.NeedsInputCount = 6
	s.Markers.PendingSleep = true

	out, err := domain.Apply(s, domain.Command{Event: domain.EventPause, PausedBy: "user"}, env())
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(kinds(
		domain.FireTriggers{},         // 3
		domain.NeedsInputPush{},       // 4
		domain.Inference{},            // 5: the title is still pending
		domain.StatusSummaryRefresh{}, // 6
		domain.Drain{},                // 8, last
	), effectNames(out)), "(-want +got)")
	require.Equal(t, "session_needs_input", out.Effects[0].(domain.FireTriggers).Trigger)
	require.EqualValues(t, 7, out.Effects[1].(domain.NeedsInputPush).NeedsInputCount, "the debounce marker is incremented")
	require.EqualValues(t, 7, out.Session.Markers.NeedsInputCount)
	require.Empty(t, out.Session.Markers.RunningJobID, "2: job cleaned up")
	require.Equal(t, "user", out.Session.Markers.PausedBy)

	// 7: the deferred sleep fired, and 8 read the state it left.
	require.Equal(t, []domain.Event{domain.EventPause, domain.EventSleep}, out.Applied)
	require.Equal(t, domain.StatusWaiting, out.Session.Status)
	require.False(t, out.Session.Markers.PendingSleep)
	require.Equal(t, "waiting", out.Effects[4].(domain.Drain).StatusAfter.String())

	// 1: the PR warning, first, and once per session.
	require.Equal(t, domain.TimelineWarning, out.Timeline[1].Kind)
	require.Contains(t, out.Timeline[1].Message, "no PR URL")
	require.True(t, out.Session.Markers.PRURLWarned)
	again, err := domain.Apply(withStatus(out.Session, domain.StatusRunning), domain.Command{Event: domain.EventPause}, env())
	require.NoError(t, err)
	for _, l := range again.Timeline {
		require.NotContains(t, l.Message, "no PR URL", "warned once per session")
	}
}

func withStatus(s domain.Session, st domain.Status) domain.Session {
	s.Status = st
	return s
}

func TestStatusSummaryForkIsHarvestedNotAnnounced(t *testing.T) {
	t.Parallel()
	s := session(domain.StatusRunning)
	s.Goal = "open a PR"
	s.CustomMetadata[domain.StatusSummaryForkKey] = true

	out, err := domain.Apply(s, domain.Command{Event: domain.EventPause}, env())
	require.NoError(t, err)
	// No trigger, push, inference or summary of itself (steps 3–6), and no
	// drain: its harvest archives it, which retires what is queued.
	require.Equal(t, kinds(domain.HarvestFork{}), effectNames(out))
	require.Len(t, out.Timeline, 1, "no PR warning for a fork")

	out, err = domain.Apply(s, domain.Command{Event: domain.EventFail, FailureReason: "boom"}, env())
	require.NoError(t, err)
	require.Equal(t, kinds(domain.HarvestFork{}), effectNames(out))
}

func TestPendingSleepThatRequiresAWakeIsDroppedWhenNothingIsArmed(t *testing.T) {
	t.Parallel()
	s := session(domain.StatusRunning)
	s.Markers.PendingSleep, s.Markers.PendingSleepRequiresWake = true, true

	out, err := domain.Apply(s, domain.Command{Event: domain.EventPause}, env())
	require.NoError(t, err)
	require.Equal(t, domain.StatusNeedsInput, out.Session.Status, "stale intent is not slept on")
	require.False(t, out.Session.Markers.PendingSleep)
	require.Contains(t, out.Timeline[len(out.Timeline)-1].Message, "pending sleep dropped")

	e := env()
	e.Wakes = domain.Wakes{Watchers: 1}
	out, err = domain.Apply(s, domain.Command{Event: domain.EventPause}, e)
	require.NoError(t, err)
	require.Equal(t, domain.StatusWaiting, out.Session.Status, "something is armed: sleep")
}

func TestDeliberateAndSystemRecoveryResume(t *testing.T) {
	t.Parallel()
	s := session(domain.StatusNeedsInput)
	s.Markers = domain.Markers{
		PausedBy: "user", MCPFailure: "server x", BlockedOnElicitation: true, LostElicitation: &domain.LostElicitation{Reason: domain.LostExpired},
		Elicitation:  &domain.Elicitation{ID: "e"},
		PendingSleep: true, DrainAttempts: 2, NeedsInputCount: 3,
	}
	e := env()
	e.Wakes = domain.Wakes{OneTime: 1}

	out, err := domain.Apply(s, domain.Command{Event: domain.EventResume, RunningJobID: "job-2"}, e)
	require.NoError(t, err)
	m := out.Session.Markers
	require.Equal(t, domain.Markers{NeedsInputCount: 3, RunningJobID: "job-2"}, m, "a deliberate resume clears every marker")
	require.Equal(t, now, *out.Session.ElapsedSince, "elapsed clock reset")
	require.Equal(t, kinds(domain.RecordFlags{}, domain.MarkNotificationsStale{}, domain.CancelWakes{}), effectNames(out))
	require.Equal(t, false, out.Effects[2].(domain.CancelWakes).Preserve)

	out, err = domain.Apply(s, domain.Command{Event: domain.EventResume, SystemRecovery: true}, e)
	require.NoError(t, err)
	require.Equal(t, true, out.Effects[2].(domain.CancelWakes).Preserve, "recovery keeps the wakes armed")
	require.True(t, out.Session.Markers.PendingSleep, "and re-sleeps on the wall-clock wake after the turn")
	require.True(t, out.Session.Markers.PendingSleepRequiresWake)

	e.Wakes = domain.Wakes{Watchers: 2}
	out, err = domain.Apply(s, domain.Command{Event: domain.EventResume, SystemRecovery: true}, e)
	require.NoError(t, err)
	require.False(t, out.Session.Markers.PendingSleep, "watchers only: come to rest in needs_input, watchers armed")
}

// A resume whose caller names no job (a restart) is owned by the job id
// drawn for it and asks the runner for a turn under it; a resume naming its
// job (the runner's own recovery) keeps that job and asks for none.
func TestResumeNamingNoJobTakesTheFreshOneAndAsksForATurn(t *testing.T) {
	t.Parallel()
	e := env()
	e.FreshJobID = "resume/fresh"

	out, err := domain.Apply(session(domain.StatusFailed), domain.Command{Event: domain.EventResume}, e)
	require.NoError(t, err)
	require.Equal(t, "resume/fresh", out.Session.Markers.RunningJobID)
	require.True(t, out.AsksForTurn)

	out, err = domain.Apply(session(domain.StatusNeedsInput),
		domain.Command{Event: domain.EventResume, SystemRecovery: true, RunningJobID: "session-5/turn-3"}, e)
	require.NoError(t, err)
	require.Equal(t, "session-5/turn-3", out.Session.Markers.RunningJobID)
	require.False(t, out.AsksForTurn)

	out, err = domain.Apply(session(domain.StatusWaiting), domain.Command{Event: domain.EventStart, RunningJobID: "session-5/turn-1"}, e)
	require.NoError(t, err)
	require.Equal(t, "session-5/turn-1", out.Session.Markers.RunningJobID)
	require.False(t, out.AsksForTurn, "a start is the runner's own")
}

func TestFail(t *testing.T) {
	t.Parallel()
	s := session(domain.StatusRunning)
	s.Goal = "merge the PR"
	s.Markers.RunningJobID = "job"
	out, err := domain.Apply(s, domain.Command{Event: domain.EventFail, FailureReason: "clone vanished"}, env())
	require.NoError(t, err)
	require.Equal(t, "clone vanished", out.Session.Markers.FailureReason)
	require.Empty(t, out.Session.Markers.RunningJobID)
	require.Equal(t, kinds(domain.FireTriggers{}, domain.FailurePush{}, domain.StatusSummaryRefresh{}), effectNames(out))
	require.Equal(t, "session_failed", out.Effects[0].(domain.FireTriggers).Trigger)
	require.Contains(t, out.Timeline[len(out.Timeline)-1].Message, "no PR URL", "the PR warning comes last")
}

func TestArchiveAndUnarchive(t *testing.T) {
	t.Parallel()
	s := session(domain.StatusFailed)
	s.PullRequests = []domain.PullRequest{trackedPR(1, domain.PullRequestMerged), trackedPR(2, domain.PullRequestOpen)}

	out, err := domain.Apply(s, domain.Command{Event: domain.EventArchive, Actor: domain.Actor{Kind: domain.ActorMCP, SessionID: 5225}}, env())
	require.NoError(t, err)
	a := out.Session
	require.Equal(t, now, *a.ArchivedAt)
	require.Equal(t, now.Add(96*time.Hour), *a.TrashAfter)
	require.Equal(t, domain.StatusFailed, *a.ArchivedFrom)
	require.Equal(t, kinds(domain.DismissNotifications{}, domain.FireTriggers{}, domain.CleanupWatchers{}, domain.DeferredCleanup{},
		domain.RetireMessages{}), effectNames(out))
	require.Equal(t, domain.RetireMessages{Forced: false, ArchivedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}, out.Effects[4],
		"an archive that did not force past the guard (a system archive among them) pages about what it retires")
	require.Equal(t, "[State Machine] Session moved to trash by session #5225 via the MCP API — 1 tracked pull request had not reached a terminal state, so no merge notification will be delivered for it: https://github.com/acme/app/pull/2",
		out.Timeline[0].Message)

	back, err := domain.Apply(a, domain.Command{Event: domain.EventUnarchiveToFailed}, env())
	require.NoError(t, err)
	require.Equal(t, kinds(domain.ReopenMessages{}, domain.RestoreClone{}), effectNames(back))
	require.Equal(t, domain.ReopenMessages{UnarchivedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}, back.Effects[0])
	require.Equal(t, domain.StatusFailed, back.Session.Status, "the raw event keeps its target")
	require.Nil(t, back.Session.TrashAfter, "unarchive clears the trash expiry")
	require.Nil(t, back.Session.ArchivedFrom)

	// The restore (the named unarchive verb) lands in needs_input from
	// wherever the session was archived (issue 9, item 13); it used to
	// choose from archived_from.
	require.Equal(t, domain.EventUnarchiveToNeedsInput, domain.EventRestore)
	for _, from := range []domain.Status{domain.StatusWaiting, domain.StatusRunning, domain.StatusNeedsInput, domain.StatusFailed} {
		out, err := domain.Apply(session(from), domain.Command{Event: domain.EventArchive}, env())
		require.NoError(t, err)
		require.Equal(t, from, *out.Session.ArchivedFrom, "kept for an undo")
		back, err := domain.Apply(out.Session, domain.Command{Event: domain.EventRestore}, env())
		require.NoError(t, err)
		require.Equal(t, domain.StatusNeedsInput, back.Session.Status, "archived from %s", from)
		require.Equal(t, kinds(domain.ReopenMessages{}, domain.RestoreClone{}), effectNames(back),
			"every unarchive reopens the queue and restores the clone")
	}
}

func TestArchiveLineNamesTheActorNeverInferred(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		actor domain.Actor
		want  string
	}{
		{domain.Actor{}, "by an unrecorded caller"},
		{domain.Actor{Kind: domain.ActorWebUI}, "by a user in the web UI"},
		{domain.Actor{Kind: domain.ActorREST}, "by a caller of the REST API"},
		{domain.Actor{Kind: domain.ActorMCP}, "by an undeclared MCP API caller"},
		{domain.Actor{Kind: domain.ActorMCP, SessionID: 7}, "by session #7 via the MCP API"},
		{domain.Actor{Kind: domain.ActorSelfSessionMCP, SessionID: 7}, "by session #7 via the self-session MCP server"},
		{domain.Actor{Kind: domain.ActorSelfSessionMCP}, "by an undeclared caller via the self-session MCP server"},
		{domain.Actor{Kind: domain.ActorMCP, SessionID: 7, Bulk: true}, "by session #7 via the MCP API (bulk)"},
		{domain.Actor{Kind: domain.ActorMCP, Bulk: true}, "by an undeclared MCP API caller (bulk)"},
		{domain.Actor{Kind: domain.ActorREST, Bulk: true}, "by a caller of the REST API (bulk)"},
		{domain.Actor{Kind: domain.ActorREST, SessionID: 7, Bulk: true}, "by session #7 via the REST API (bulk)"},
		{domain.Actor{Kind: domain.ActorSweep, Sweep: "stale-session sweep (untouched for 7 days)"}, "by Zimmer's stale-session sweep (untouched for 7 days)"},
	} {
		require.Equal(t, "[State Machine] Session moved to trash "+tt.want, domain.ArchiveLine(tt.actor, nil))
	}
	require.Contains(t, domain.ArchiveLine(domain.Actor{}, []string{"a", "b"}), "2 tracked pull requests had not reached a terminal state, so no merge notification will be delivered for them: a, b")
}

// TestForcedArchiveNamesWhatItRetires: the queue's clause follows the
// spec's words on the archive line, and the retirement says it was forced.
func TestForcedArchiveNamesWhatItRetires(t *testing.T) {
	t.Parallel()
	clause := ` — 1 queued message was never delivered and is now marked undelivered: "What do you mean I pulled yellow onion?"`
	s := session(domain.StatusRunning)
	s.PullRequests = []domain.PullRequest{trackedPR(2, domain.PullRequestOpen)}
	out, err := domain.Apply(s, domain.Command{Event: domain.EventArchive, Force: true, RetirementClause: clause,
		Actor: domain.Actor{Kind: domain.ActorMCP, SessionID: 5225, By: "operator key …abcd"}}, env())
	require.NoError(t, err)
	require.Equal(t, "[State Machine] Session moved to trash by session #5225 via the MCP API"+
		" — 1 tracked pull request had not reached a terminal state, so no merge notification will be delivered for it: https://github.com/acme/app/pull/2"+
		clause+" (by operator key …abcd)", out.Timeline[0].Message)
	retire := out.Effects[len(out.Effects)-1]
	require.IsType(t, domain.RetireMessages{}, retire)
	require.Equal(t, true, retire.(domain.RetireMessages).Forced)
	require.Equal(t, domain.OwnerQueue, retire.Owner())
	require.True(t, retire.Alerting())
	reopen := domain.ReopenMessages{}
	require.Equal(t, domain.OwnerQueue, reopen.Owner())
	require.True(t, reopen.Alerting())
}

func TestEffectAlertSplit(t *testing.T) {
	t.Parallel()
	require.True(t, domain.CancelWakes{}.Alerting())
	require.True(t, domain.FireTriggers{}.Alerting())
	require.False(t, domain.FailurePush{}.Alerting())
	require.False(t, domain.DismissNotifications{}.Alerting())
	restore := domain.RestoreClone{}
	require.True(t, restore.Alerting(), "a lost restore strands the preserved work")
	require.Equal(t, domain.OwnerRunner, restore.Owner())
	require.True(t, errors.Is(&domain.NotFoundError{}, domain.ErrNotFound))
}

// TestAPauseWithAnAuthOutageReasonParksTheSession: the runner's park (a
// turn hit its login's wall) is one pause that sets the marker and
// paused_by and goes on to sleep with nothing armed, superseding a
// pending sleep; any resume ends the park.
func TestAPauseWithAnAuthOutageReasonParksTheSession(t *testing.T) {
	t.Parallel()
	s := session(domain.StatusRunning)
	s.Markers.PendingSleep = true
	reason := `claude_code account "a" hit its usage limit; resets at 2026-11-30T17:00:00Z`

	out, err := domain.Apply(s, domain.Command{Event: domain.EventPause, AuthOutageReason: reason}, env())
	require.NoError(t, err)
	require.Equal(t, domain.StatusWaiting, out.Session.Status, "parked on the sleep path")
	require.Equal(t, []domain.Event{domain.EventPause, domain.EventSleep}, out.Applied)
	m := out.Session.Markers
	require.Equal(t, reason, m.AuthOutageReason)
	require.Equal(t, "auth_outage", m.PausedBy)
	require.False(t, m.PendingSleep, "the park supersedes a pending sleep")
	require.Equal(t, domain.Drain{StatusAfter: domain.StatusWaiting}, out.Effects[len(out.Effects)-1],
		"the drain reads the park: nothing is delivered to a waiting session")
	require.Contains(t, out.Timeline[len(out.Timeline)-2].Message, "[Accounts] parked until the login pool refills: "+reason)

	for _, recovery := range []bool{false, true} {
		resumed, err := domain.Apply(out.Session, domain.Command{Event: domain.EventResume, SystemRecovery: recovery, RunningJobID: "job-9"}, env())
		require.NoError(t, err)
		require.Empty(t, resumed.Session.Markers.AuthOutageReason, "a resume ends the park")
		require.Empty(t, resumed.Session.Markers.PausedBy)
	}

	_, err = domain.Apply(s, domain.Command{Event: domain.EventPause, AuthOutageReason: strings.Repeat("x", domain.MaxAuthOutageReasonChars+1)}, env())
	require.NoError(t, err, "Apply does not validate; the app does (Command.Validate)")
	require.Error(t, domain.Command{Event: domain.EventPause, AuthOutageReason: strings.Repeat("x", domain.MaxAuthOutageReasonChars+1)}.Validate())
}
