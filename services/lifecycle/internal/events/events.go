// Package events encodes the lifecycle context's domain events as the
// protobuf messages other contexts consume, and names who consumes them.
package events

import (
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/wire"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
)

// Subscribers of lifecycle events.
const (
	SubscriberLineage = "lineage"
	// SubscriberRunnerTurns is the runner's turn consumer: a session's
	// creation and every change that asks for a turn (Outcome.AsksForTurn:
	// a restart, a delivered follow-up or queued message; lifecycle draws
	// the job id, and SessionUpdated.turn carries it with the prompt) each
	// ask it for a turn, a one-time wake that fires on a session that never
	// started asks for its first turn again (turn.first, FirstTurnAsked),
	// and a transition out of running may ask it to stop one. It is a subscriber of its own, apart from the effects the
	// runner owns (domain.OwnerRunner), so those stay queued until the
	// runner consumes them.
	SubscriberRunnerTurns = "runner_turns"
	// SubscriberTriggers is the triggers' timers: lifecycle delivers its
	// events in-process (internal/wake), starting the trigger's Temporal
	// workflow.
	SubscriberTriggers = domain.OwnerTriggers
	// SubscriberPullRequestWatches is the watches of the sessions' pull
	// requests (LC-39): a transition out of archived (an unarchive, a
	// restore from trash) goes to it, and lifecycle, in-process, starts the
	// watch of each of the session's open pull requests again — archiving
	// ended them.
	SubscriberPullRequestWatches = "pull_request_watches"
)

// Topics.
const (
	TopicSessionCreated = "lifecycle.session_created"
	TopicSessionUpdated = "lifecycle.session_updated"
	TopicSessionDeleted = "lifecycle.session_deleted"
	// TopicTriggerArmed: a one-time trigger was armed; its payload is the
	// lifecyclev1.Trigger.
	TopicTriggerArmed = "lifecycle.trigger_armed"
	// TopicTriggerDue: a watcher fired and is to be delivered now; its
	// payload is the lifecyclev1.Trigger.
	TopicTriggerDue = "lifecycle.trigger_due"
)

// TopicEffectPrefix starts the topic of every effect: the topic is the
// prefix and the effect's name.
const TopicEffectPrefix = "lifecycle.effect."

// Codec implements store.Codec.
type Codec struct{}

// Encode turns a fact into outbox events.
func (Codec) Encode(f domain.Fact) ([]outbox.Addressed, error) { return Encode(f) }

// EffectName is the spec's callback name of e ("" for a kind without a
// wire message, which Encode refuses).
func (Codec) EffectName(e domain.Effect) string {
	msg, err := Effect(e)
	if err != nil {
		return ""
	}
	return effect.Name(msg)
}

// Stream reads a recorded event back as stream entries.
func (Codec) Stream(topic string, payload []byte) ([]domain.StreamEvent, error) {
	return Stream(topic, payload)
}

// Encode turns a fact into the announcement lineage keeps its read model
// with and, for a transition, one event per side effect addressed to the
// context that owns it. The announcement of a transition says what was
// applied, so it doubles as the transition's entry in the event stream.
func Encode(f domain.Fact) ([]outbox.Addressed, error) {
	switch f := f.(type) {
	case domain.SessionCreated:
		s, err := wire.Session(f.Session)
		if err != nil {
			return nil, err
		}
		return one(build(TopicSessionCreated, f.Session, &lifecyclev1.SessionEvent{
			Payload: &lifecyclev1.SessionEvent_Created{Created: &lifecyclev1.SessionCreated{Session: s}},
		}, SubscriberLineage, SubscriberRunnerTurns))
	case domain.SessionEdited:
		s, err := withoutPrompt(f.Session)
		if err != nil {
			return nil, err
		}
		return one(build(TopicSessionUpdated, f.Session, &lifecyclev1.SessionEvent{
			Payload: &lifecyclev1.SessionEvent_Updated{Updated: &lifecyclev1.SessionUpdated{Session: s}},
		}, SubscriberLineage))
	case domain.SessionTransitioned:
		s, err := withoutPrompt(f.Session)
		if err != nil {
			return nil, err
		}
		t := &lifecyclev1.Transition{From: f.Outcome.From.String(), To: f.Session.Status.String()}
		for _, e := range f.Outcome.Applied {
			t.Events = append(t.Events, string(e))
		}
		var effects []outbox.Addressed
		for _, e := range f.Outcome.Effects {
			msg, err := Effect(e)
			if err != nil {
				return nil, err
			}
			name := effect.Name(msg)
			if e.Owner() == "" {
				t.LocalEffects = append(t.LocalEffects, name)
				continue
			}
			msg.Alerting, msg.Session = e.Alerting(), s
			a, err := build(TopicEffectPrefix+name, f.Session, &lifecyclev1.SessionEvent{
				Payload: &lifecyclev1.SessionEvent_Effect{Effect: msg},
			}, e.Owner())
			if err != nil {
				return nil, err
			}
			effects = append(effects, a)
		}
		var (
			also []string
			turn *lifecyclev1.TurnRequest
		)
		switch {
		case f.Outcome.AsksForTurn:
			// A turn no running job made — a restart, a delivered follow-up
			// or queued message: the runner runs it under the session's
			// running_job_id, with the prompt ("" for a restart).
			also = append(also, SubscriberRunnerTurns)
			turn = &lifecyclev1.TurnRequest{JobId: f.Session.Markers.RunningJobID, Prompt: f.Outcome.TurnPrompt}
		case f.Outcome.From == domain.StatusRunning && f.Session.Status != domain.StatusRunning:
			// The session left running (a user's pause, an archive, or the
			// runner's own turn end): the runner stops a turn still running
			// when the session is not running any more.
			also = append(also, SubscriberRunnerTurns)
		}
		if f.Outcome.From == domain.StatusArchived && f.Session.Status != domain.StatusArchived {
			also = append(also, SubscriberPullRequestWatches)
		}
		announced, err := build(TopicSessionUpdated, f.Session, &lifecyclev1.SessionEvent{
			Payload: &lifecyclev1.SessionEvent_Updated{Updated: &lifecyclev1.SessionUpdated{Session: s, Transition: t, Turn: turn}},
		}, append([]string{SubscriberLineage}, also...)...)
		if err != nil {
			return nil, err
		}
		return append([]outbox.Addressed{announced}, effects...), nil
	case domain.FirstTurnAsked:
		// The runner's first turn, asked again: it starts the session with
		// its own prompt (the snapshot goes without it, as after creation).
		s, err := withoutPrompt(f.Session)
		if err != nil {
			return nil, err
		}
		return one(build(TopicSessionUpdated, f.Session, &lifecyclev1.SessionEvent{
			Payload: &lifecyclev1.SessionEvent_Updated{Updated: &lifecyclev1.SessionUpdated{
				Session: s, Turn: &lifecyclev1.TurnRequest{First: true, Prompt: f.Session.Prompt},
			}},
		}, SubscriberRunnerTurns))
	case domain.TriggerArmedEvent:
		return one(trigger(TopicTriggerArmed, f.Trigger))
	case domain.TriggerDueEvent:
		return one(trigger(TopicTriggerDue, f.Trigger))
	case domain.SessionDeleted:
		return one(build(TopicSessionDeleted, domain.Session{ID: f.SessionID, UpdatedAt: time.Now().UTC()}, &lifecyclev1.SessionEvent{
			Payload: &lifecyclev1.SessionEvent_Deleted{Deleted: &lifecyclev1.SessionDeleted{SessionId: f.SessionID}},
		}, SubscriberLineage))
	default:
		return nil, fmt.Errorf("no encoding for %T", f)
	}
}

// Stream reads a recorded event back as entries of the session's event
// stream: a transition's announcement becomes its "transition" entry (from,
// to, the events applied) followed by the effects it carried out in its own
// transaction, and an effect becomes an entry of its own. Other events
// (creation, edits, deletion) are not part of the stream.
func Stream(_ string, payload []byte) ([]domain.StreamEvent, error) {
	msg, err := Decode(payload)
	if err != nil {
		return nil, err
	}
	at := msg.GetOccurredAt().AsTime().UTC()
	switch p := msg.GetPayload().(type) {
	case *lifecyclev1.SessionEvent_Updated:
		t := p.Updated.GetTransition()
		if t == nil {
			return nil, nil
		}
		events := make([]any, len(t.GetEvents()))
		for i, e := range t.GetEvents() {
			events[i] = e
		}
		out := []domain.StreamEvent{{Name: "transition", CreatedAt: at, Payload: map[string]any{
			"from": t.GetFrom(), "to": t.GetTo(), "events": events,
		}}}
		for _, name := range t.GetLocalEffects() {
			out = append(out, domain.StreamEvent{Name: name, CreatedAt: at, Payload: map[string]any{}})
		}
		return out, nil
	case *lifecyclev1.SessionEvent_Effect:
		return []domain.StreamEvent{{
			Name: effect.Name(p.Effect), Alerting: p.Effect.GetAlerting(), CreatedAt: at,
			Payload: streamPayload(effect.Kind(p.Effect)),
		}}, nil
	default:
		return nil, nil
	}
}

// withoutPrompt is the snapshot every event after creation carries: the
// prompt never changes and can be half a megabyte, and a transition sends
// one event per effect.
func withoutPrompt(s domain.Session) (*lifecyclev1.Session, error) {
	s.Prompt = ""
	return wire.Session(s)
}

func one(a outbox.Addressed, err error) ([]outbox.Addressed, error) {
	if err != nil {
		return nil, err
	}
	return []outbox.Addressed{a}, nil
}

func build(topic string, s domain.Session, msg *lifecyclev1.SessionEvent, subscribers ...string) (outbox.Addressed, error) {
	msg.EventId = uuid.NewString()
	msg.SessionId = s.ID
	msg.OccurredAt = timestamppb.New(s.UpdatedAt)
	payload, err := proto.Marshal(msg)
	if err != nil {
		return outbox.Addressed{}, fmt.Errorf("marshal %s: %w", topic, err)
	}
	return outbox.Addressed{Event: outbox.Event{
		ID:           msg.EventId,
		Topic:        topic,
		AggregateKey: strconv.FormatInt(s.ID, 10),
		Payload:      payload,
	}, Subscribers: subscribers}, nil
}

// trigger addresses a trigger's event to the triggers' timers, keyed by the
// session it wakes.
func trigger(topic string, t domain.Trigger) (outbox.Addressed, error) {
	payload, err := proto.Marshal(wire.Trigger(t))
	if err != nil {
		return outbox.Addressed{}, fmt.Errorf("marshal %s: %w", topic, err)
	}
	return outbox.Addressed{Event: outbox.Event{
		ID:           uuid.NewString(),
		Topic:        topic,
		AggregateKey: strconv.FormatInt(t.SessionID, 10),
		Payload:      payload,
	}, Subscribers: []string{SubscriberTriggers}}, nil
}

// DecodeTrigger reads a trigger event's payload back.
func DecodeTrigger(payload []byte) (*lifecyclev1.Trigger, error) {
	var t lifecyclev1.Trigger
	if err := proto.Unmarshal(payload, &t); err != nil {
		return nil, fmt.Errorf("decode trigger event: %w", err)
	}
	return &t, nil
}

// Decode reads an outbox payload back into the event message.
func Decode(payload []byte) (*lifecyclev1.SessionEvent, error) {
	var msg lifecyclev1.SessionEvent
	if err := proto.Unmarshal(payload, &msg); err != nil {
		return nil, fmt.Errorf("decode session event: %w", err)
	}
	return &msg, nil
}
