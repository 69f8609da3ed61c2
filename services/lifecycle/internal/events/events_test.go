package events_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/events"
)

func subscribersOf(t *testing.T, f domain.Fact, topic string) []string {
	t.Helper()
	addressed, err := events.Encode(f)
	require.NoError(t, err)
	for _, a := range addressed {
		if a.Event.Topic == topic {
			return a.Subscribers
		}
	}
	t.Fatalf("no %s among %d events", topic, len(addressed))
	return nil
}

// The runner hears of exactly the facts that ask it for a turn — a creation,
// and a resume that asks for one (a restart, whose job lifecycle drew; its
// own recovery resumes name their turn as the running job and must not ask
// it for another) — and of a session leaving running, which may stop a turn.
func TestTheRunnerHearsOfCreationsAndUnownedResumes(t *testing.T) {
	t.Parallel()
	s := domain.Session{ID: 4, Status: domain.StatusRunning, UpdatedAt: time.Unix(100, 0).UTC()}
	require.Equal(t, []string{events.SubscriberLineage, events.SubscriberRunnerTurns},
		subscribersOf(t, domain.SessionCreated{Session: s}, events.TopicSessionCreated))

	resumed := domain.SessionTransitioned{Session: s, Outcome: domain.Outcome{
		From: domain.StatusNeedsInput, Applied: []domain.Event{domain.EventResume}, AsksForTurn: true}}
	resumed.Session.Markers.RunningJobID = "resume/drawn-by-lifecycle"
	require.Equal(t, []string{events.SubscriberLineage, events.SubscriberRunnerTurns},
		subscribersOf(t, resumed, events.TopicSessionUpdated))

	owned := resumed
	owned.Outcome.AsksForTurn = false
	owned.Session.Markers.RunningJobID = "session-4/turn-2"
	require.Equal(t, []string{events.SubscriberLineage}, subscribersOf(t, owned, events.TopicSessionUpdated))

	paused := domain.SessionTransitioned{Session: domain.Session{ID: 4, Status: domain.StatusNeedsInput, UpdatedAt: s.UpdatedAt},
		Outcome: domain.Outcome{From: domain.StatusRunning, Applied: []domain.Event{domain.EventPause}}}
	require.Equal(t, []string{events.SubscriberLineage, events.SubscriberRunnerTurns}, subscribersOf(t, paused, events.TopicSessionUpdated),
		"leaving running may stop a turn")

	slept := domain.SessionTransitioned{Session: domain.Session{ID: 4, Status: domain.StatusWaiting, UpdatedAt: s.UpdatedAt},
		Outcome: domain.Outcome{From: domain.StatusNeedsInput, Applied: []domain.Event{domain.EventSleep}}}
	require.Equal(t, []string{events.SubscriberLineage}, subscribersOf(t, slept, events.TopicSessionUpdated))
}

func updatedOf(t *testing.T, f domain.Fact) (subscribers []string, turn *lifecyclev1.TurnRequest) {
	t.Helper()
	addressed, err := events.Encode(f)
	require.NoError(t, err)
	for _, a := range addressed {
		if a.Event.Topic == events.TopicSessionUpdated {
			evt, err := events.Decode(a.Event.Payload)
			require.NoError(t, err)
			return a.Subscribers, evt.GetUpdated().GetTurn()
		}
	}
	t.Fatalf("no %s among %d events", events.TopicSessionUpdated, len(addressed))
	return nil, nil
}

// Every change that asks the runner for a turn carries the turn — its job
// and prompt — and goes to runner_turns: a restart (prompt ""), a delivery
// to an idle session, a delivery after an interrupt. A handover, whose
// runner runs the prompt itself, asks for none.
func TestEveryTurnRequestCarriesItsJobAndPrompt(t *testing.T) {
	t.Parallel()
	running := domain.Session{ID: 4, Status: domain.StatusRunning, UpdatedAt: time.Unix(100, 0).UTC()}
	running.Markers.RunningJobID = "delivery/0d5c"

	restart := domain.SessionTransitioned{Session: running, Outcome: domain.Outcome{
		From: domain.StatusFailed, Applied: []domain.Event{domain.EventResume}, AsksForTurn: true}}
	subs, turn := updatedOf(t, restart)
	require.Equal(t, []string{events.SubscriberLineage, events.SubscriberRunnerTurns}, subs)
	require.NotNil(t, turn)
	require.Equal(t, "delivery/0d5c", turn.GetJobId())
	require.Empty(t, turn.GetPrompt(), "a restart's turn is the runner's continue nudge")

	idle := restart
	idle.Outcome.From, idle.Outcome.TurnPrompt = domain.StatusNeedsInput, "rebase it"
	subs, turn = updatedOf(t, idle)
	require.Equal(t, []string{events.SubscriberLineage, events.SubscriberRunnerTurns}, subs)
	require.Equal(t, "delivery/0d5c", turn.GetJobId())
	require.Equal(t, "rebase it", turn.GetPrompt())

	afterInterrupt := domain.SessionTransitioned{Session: running, Outcome: domain.Outcome{
		From: domain.StatusRunning, AsksForTurn: true, TurnPrompt: "stop and rebase"}}
	subs, turn = updatedOf(t, afterInterrupt)
	require.Equal(t, []string{events.SubscriberLineage, events.SubscriberRunnerTurns}, subs)
	require.Equal(t, "stop and rebase", turn.GetPrompt())

	handover := domain.SessionTransitioned{Session: running, Outcome: domain.Outcome{From: domain.StatusRunning}}
	subs, turn = updatedOf(t, handover)
	require.Equal(t, []string{events.SubscriberLineage}, subs, "a handover asks the runner for nothing")
	require.Nil(t, turn)

	paused := domain.SessionTransitioned{Session: domain.Session{ID: 4, Status: domain.StatusNeedsInput, UpdatedAt: running.UpdatedAt},
		Outcome: domain.Outcome{From: domain.StatusRunning, Applied: []domain.Event{domain.EventPause}}}
	subs, turn = updatedOf(t, paused)
	require.Equal(t, []string{events.SubscriberLineage, events.SubscriberRunnerTurns}, subs, "leaving running may stop a turn")
	require.Nil(t, turn, "but asks for none")

	never := domain.Session{ID: 4, Status: domain.StatusWaiting, Prompt: "build it", UpdatedAt: running.UpdatedAt}
	subs, turn = updatedOf(t, domain.FirstTurnAsked{Session: never})
	require.Equal(t, []string{events.SubscriberRunnerTurns}, subs, "a first turn asked again is the runner's alone")
	require.True(t, turn.GetFirst())
	require.Equal(t, "build it", turn.GetPrompt(), "the first turn runs the session's own prompt")
	require.Empty(t, turn.GetJobId(), "the runner draws the first turn's job")
}

// A transition out of archived — an unarchive, a restore from trash — goes
// to the pull requests' watches, which the archive ended (LC-39); the
// archive itself and every other transition do not.
func TestAnUnarchiveGoesToThePullRequestWatches(t *testing.T) {
	t.Parallel()
	at := time.Unix(100, 0).UTC()
	restored := domain.SessionTransitioned{Session: domain.Session{ID: 4, Status: domain.StatusNeedsInput, UpdatedAt: at},
		Outcome: domain.Outcome{From: domain.StatusArchived, Applied: []domain.Event{domain.EventRestore}}}
	subs, _ := updatedOf(t, restored)
	require.Equal(t, []string{events.SubscriberLineage, events.SubscriberPullRequestWatches}, subs)

	archived := domain.SessionTransitioned{Session: domain.Session{ID: 4, Status: domain.StatusArchived, UpdatedAt: at},
		Outcome: domain.Outcome{From: domain.StatusNeedsInput, Applied: []domain.Event{domain.EventArchive}}}
	subs, _ = updatedOf(t, archived)
	require.NotContains(t, subs, events.SubscriberPullRequestWatches)
}

// Every effect of a transition travels as its typed message to its owner,
// under its name; lifecycle's own ride on the announcement by name; and
// each reads back into the event stream as operators have always seen it
// (fields by name, times in whole RFC 3339 seconds).
func TestEffectsTravelTypedAndReadBackAsTheStreamShowsThem(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 12, 0, 0, 750_000_000, time.UTC) // a fraction the stream drops
	s := domain.Session{ID: 4, Status: domain.StatusArchived, UpdatedAt: at}
	f := domain.SessionTransitioned{Session: s, Outcome: domain.Outcome{
		From: domain.StatusFailed, Applied: []domain.Event{domain.EventArchive},
		Effects: []domain.Effect{
			domain.CancelWakes{Preserve: true},
			domain.NeedsInputPush{NeedsInputCount: 7},
			domain.DeferredCleanup{TrashAfter: at.Add(96 * time.Hour)},
			domain.RetireMessages{Forced: false, ArchivedAt: at},
			domain.HarvestFork{},
			domain.HarvestFork{Failed: true, FailureReason: ""},
		},
	}}
	addressed, err := events.Encode(f)
	require.NoError(t, err)
	require.Len(t, addressed, 6, "the announcement and one event per owned effect")

	var (
		topics  []string
		owners  [][]string
		entries []domain.StreamEvent
	)
	for _, a := range addressed {
		topics, owners = append(topics, a.Event.Topic), append(owners, a.Subscribers)
		read, err := events.Stream(a.Event.Topic, a.Event.Payload)
		require.NoError(t, err)
		entries = append(entries, read...)
	}
	name := events.Codec{}.EffectName // the names themselves: lifecycle/effect's test
	require.Equal(t, []string{
		events.TopicSessionUpdated,
		events.TopicEffectPrefix + name(domain.NeedsInputPush{}),
		events.TopicEffectPrefix + name(domain.DeferredCleanup{}),
		events.TopicEffectPrefix + name(domain.RetireMessages{}),
		events.TopicEffectPrefix + name(domain.HarvestFork{}),
		events.TopicEffectPrefix + name(domain.HarvestFork{}),
	}, topics)
	require.Equal(t, [][]string{{events.SubscriberLineage}, {domain.OwnerNotification}, {domain.OwnerRunner}, {domain.OwnerQueue},
		{domain.OwnerRunner}, {domain.OwnerRunner}}, owners)

	retire, err := events.Decode(addressed[3].Event.Payload)
	require.NoError(t, err)
	kind, ok := retire.GetEffect().GetKind().(*lifecyclev1.SessionEffect_RetireMessages)
	require.True(t, ok, "the queue switches on the effect's type")
	require.Equal(t, at, kind.RetireMessages.GetArchivedAt().AsTime(),
		"the queue orders an archive against the unarchive that undid it by this time: a fraction is kept")
	require.True(t, retire.GetEffect().GetAlerting())
	require.EqualValues(t, 4, retire.GetEffect().GetSession().GetId())

	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	require.Equal(t, []string{"transition", name(domain.CancelWakes{}),
		name(domain.NeedsInputPush{}), name(domain.DeferredCleanup{}), name(domain.RetireMessages{}),
		name(domain.HarvestFork{}), name(domain.HarvestFork{})}, names)
	require.Equal(t, map[string]any{}, entries[1].Payload, "lifecycle's own effects show no payload")
	require.Equal(t, map[string]any{"needs_input_count": int64(7)}, entries[2].Payload)
	require.Equal(t, map[string]any{"trash_after": "2026-12-04T12:00:00Z"}, entries[3].Payload)
	require.Equal(t, map[string]any{"forced": false, "archived_at": "2026-11-30T12:00:00Z", "attempt_id": ""}, entries[4].Payload)
	require.Equal(t, map[string]any{}, entries[5].Payload, "a paused fork's harvest carries no reason")
	require.Equal(t, map[string]any{"failure_reason": ""}, entries[6].Payload, "a failed fork's carries its reason, even empty")
}

// Every kind of the domain's effects has its wire message, and so its name;
// a kind without one is refused, not sent nameless.
func TestEveryDomainEffectHasItsWireMessage(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, e := range []domain.Effect{
		domain.FireTriggers{}, domain.NeedsInputPush{}, domain.Inference{}, domain.StatusSummaryRefresh{}, domain.Drain{},
		domain.CancelWakes{}, domain.MarkNotificationsStale{}, domain.FailurePush{}, domain.DismissNotifications{},
		domain.CleanupWatchers{}, domain.DeferredCleanup{}, domain.HarvestFork{}, domain.RecordFlags{},
		domain.RetireMessages{}, domain.ReopenMessages{}, domain.RestoreClone{},
	} {
		name := events.Codec{}.EffectName(e)
		require.NotEmpty(t, name, "%T", e)
		require.False(t, names[name], "%T shares its name %s", e, name)
		names[name] = true
	}
	_, err := events.Effect(unknownEffect{})
	require.ErrorContains(t, err, "no wire message for effect events_test.unknownEffect")
}

type unknownEffect struct{}

func (unknownEffect) Owner() string  { return domain.OwnerQueue }
func (unknownEffect) Alerting() bool { return false }
