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
