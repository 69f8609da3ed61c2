package events_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
