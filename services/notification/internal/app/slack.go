package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// SlackRepository keeps the Slack triggers, the accepted events and the
// thread bindings.
type SlackRepository interface {
	CreateTrigger(ctx context.Context, t domain.SlackTrigger) (domain.SlackTrigger, error)
	// ListTriggers returns every trigger, oldest first.
	ListTriggers(ctx context.Context) ([]domain.SlackTrigger, error)
	// Trigger returns trigger id; domain.ErrTriggerNotFound when none.
	Trigger(ctx context.Context, id int64) (domain.SlackTrigger, error)
	// DeleteTrigger removes trigger id; domain.ErrTriggerNotFound when none.
	DeleteTrigger(ctx context.Context, id int64) error

	// AcceptEvent stores e unless an event with its id is stored already;
	// accepted says whether it stored it.
	AcceptEvent(ctx context.Context, e domain.SlackEvent) (accepted bool, err error)
	// Event returns the accepted event id.
	Event(ctx context.Context, id string) (domain.SlackEvent, error)
	// SetEventSession records the session event id started or followed up.
	SetEventSession(ctx context.Context, id string, sessionID int64) error
	// MarkFollowedUp records event id's follow-up done, at at, with what
	// the queue answered, which the thread is told.
	MarkFollowedUp(ctx context.Context, id, answer string, at time.Time) error
	// MarkEventStep records a step of event id done, at at.
	MarkEventStep(ctx context.Context, id string, step SlackEventStep, at time.Time) error
	// FinishEvent records event id processed, with what became of it.
	FinishEvent(ctx context.Context, id, outcome string, at time.Time) error

	// BindThread binds a thread to the session it started; binding it
	// again (a retried step) changes nothing.
	BindThread(ctx context.Context, t domain.SlackThread, at time.Time) error
	// Thread returns the binding of a thread; found is false when none.
	Thread(ctx context.Context, channelID, threadTS string) (t domain.SlackThread, found bool, err error)
	// ThreadOfSession returns the thread session id started in; found is
	// false when it was not started from Slack.
	ThreadOfSession(ctx context.Context, sessionID int64) (t domain.SlackThread, found bool, err error)
}

// SlackEventStep is a step of processing an event, recorded once done so a
// retried activity does not do it again.
type SlackEventStep string

// The steps marked by MarkEventStep; the follow-up's is MarkFollowedUp,
// which keeps the queue's answer too.
const (
	StepCaptured SlackEventStep = "captured"
	StepReplied  SlackEventStep = "replied"
)

// StartSpec is the session a trigger starts.
type StartSpec struct {
	Prompt       string
	GitRoot      string
	AgentRoot    string
	AgentRuntime string
	// Slug makes the start idempotent: the session is found by it when it
	// was started before.
	Slug string
	// PushNotifications opts the session into pushes (off by default,
	// issue 23 rule 8): its thread is where the person who asked waits for
	// its needs_input and failure news.
	PushNotifications bool
}

// SlackBoundary is what the Slack boundary asks of the other contexts,
// each call declaring the Slack user who spoke as the boundary's actor
// (platform/boundary), as the notification service itself.
type SlackBoundary interface {
	// StartSession creates the session (genesis slack); a session with
	// spec.Slug already there is the one returned.
	StartSession(ctx context.Context, slackUserID string, spec StartSpec) (sessionID int64, err error)
	// FollowUp gives the session its next prompt through the queue
	// (delivered to an idle session, queued behind a running one), once per
	// key; queued reports which, and answer is the queue's words for it.
	FollowUp(ctx context.Context, slackUserID string, sessionID int64, prompt, key string) (queued bool, answer string, err error)
	// RecordHumanMessage records what the Slack user said in the session,
	// when the roster maps them to a human; reason says why not otherwise.
	// Once per m.IdempotencyKey: a retry is answered with the first record.
	RecordHumanMessage(ctx context.Context, slackUserID string, m SlackHumanMessage) (recorded bool, reason string, err error)
}

// SlackHumanMessage is what RecordHumanMessage records.
type SlackHumanMessage struct {
	SessionID  int64
	Provenance string
	Content    string
	Permalink  string
	OccurredAt time.Time
	// IdempotencyKey names the message (domain.EventIdempotencyKey).
	IdempotencyKey string
}

// RefusedError is another context's refusal of a Slack request (an invalid
// trigger's git root, a follow-up to an archived session): retrying cannot
// help, so the event ends, and the thread is told why.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// SlackWebAPI is Slack's Web API, called with the bot token.
type SlackWebAPI interface {
	// PostMessage posts text in the thread of channel's message threadTS.
	PostMessage(ctx context.Context, channel, threadTS, text string) error
	// Permalink is the permalink of channel's message ts.
	Permalink(ctx context.Context, channel, ts string) (string, error)
}

// ErrSlackPermanent marks a Web API failure retrying cannot fix
// (channel_not_found, message_not_found, invalid_auth).
var ErrSlackPermanent = errors.New("slack refused the call")

// SlackEventStarter starts the processing of an accepted event: the
// workflow slack/event/<id>. Starting it again is a no-op.
type SlackEventStarter interface {
	StartSlackEvent(ctx context.Context, eventID string) error
}

// SlackTriggers are the triggers' use cases.
type SlackTriggers struct {
	Repo  SlackRepository
	Clock clock.Clock
}

// Create validates t and stores it.
func (uc SlackTriggers) Create(ctx context.Context, t domain.SlackTrigger) (domain.SlackTrigger, error) {
	t.Normalize()
	if err := t.Validate(); err != nil {
		return domain.SlackTrigger{}, err
	}
	t.CreatedAt = uc.Clock.Now()
	return uc.Repo.CreateTrigger(ctx, t)
}

// List lists every trigger, oldest first.
func (uc SlackTriggers) List(ctx context.Context) ([]domain.SlackTrigger, error) {
	return uc.Repo.ListTriggers(ctx)
}

// Delete removes trigger id.
func (uc SlackTriggers) Delete(ctx context.Context, id int64) error {
	if id <= 0 {
		return validation.Invalid("trigger_id", "must be a positive trigger id")
	}
	return uc.Repo.DeleteTrigger(ctx, id)
}

// AcceptSlackEvent stores a delivered event before the gateway acknowledges
// it, then starts its processing. The store comes first, so an event Slack
// was told we have is never lost; the start follows every delivery, so a
// start lost with a crashed process is made by Slack's retry of the
// unacknowledged delivery.
type AcceptSlackEvent struct {
	Repo    SlackRepository
	Starter SlackEventStarter
	Clock   clock.Clock
}

// Handle accepts payload as event eventID; accepted is false when the id
// was accepted before (a retry or a replay), which is then not stored or
// processed again.
func (uc AcceptSlackEvent) Handle(ctx context.Context, eventID string, payload []byte) (accepted bool, err error) {
	m, err := domain.ParseEventCallback(payload)
	if err != nil {
		return false, err
	}
	if m.EventID != eventID {
		return false, validation.Invalid("event_id", "%q is not the payload's event_id %q", eventID, m.EventID)
	}
	accepted, err = uc.Repo.AcceptEvent(ctx, domain.SlackEvent{EventID: eventID, Payload: payload, ReceivedAt: uc.Clock.Now()})
	if err != nil {
		return false, fmt.Errorf("store slack event %s: %w", eventID, err)
	}
	if uc.Starter == nil {
		return false, fmt.Errorf("%w: this notification service has no Temporal to process slack events", ErrNotStarted)
	}
	if err := uc.Starter.StartSlackEvent(ctx, eventID); err != nil {
		return false, err
	}
	return accepted, nil
}

// ProcessSlackEvent acts on one accepted event: a message firing a trigger
// starts a session (and the thread gets its link), a reply in a session's
// thread follows it up (and the thread is told whether it runs now or
// waits), and either is recorded as the sender's human message when the
// roster maps them. Each step is recorded done, so a retry picks up where
// it stopped; the calls into other contexts carry the event's key, so a
// step redone after a crash before its note does nothing twice.
type ProcessSlackEvent struct {
	Repo     SlackRepository
	Boundary SlackBoundary
	// API is nil without SLACK_BOT_TOKEN: nothing is posted, and messages
	// are recorded without permalinks.
	API SlackWebAPI
	// SessionURL is the link to a session, for the thread's reply.
	SessionURL func(sessionID int64) string
	Clock      clock.Clock
}

// Handle processes event id and returns what became of it.
func (uc ProcessSlackEvent) Handle(ctx context.Context, id string) (string, error) {
	ev, err := uc.Repo.Event(ctx, id)
	if err != nil {
		return "", fmt.Errorf("load slack event %s: %w", id, err)
	}
	if ev.Processed {
		return ev.Outcome, nil
	}
	m, err := domain.ParseEventCallback(ev.Payload)
	if err != nil {
		return uc.finish(ctx, ev, "ignored: "+err.Error())
	}
	if why := m.Ignored(); why != "" {
		return uc.finish(ctx, ev, "ignored: "+why)
	}
	if m.InThread() {
		return uc.followUp(ctx, ev, m)
	}
	return uc.start(ctx, ev, m)
}

func (uc ProcessSlackEvent) start(ctx context.Context, ev domain.SlackEvent, m domain.SlackMessage) (string, error) {
	triggers, err := uc.Repo.ListTriggers(ctx)
	if err != nil {
		return "", err
	}
	t, prompt, ok := domain.FirstFiring(triggers, m)
	switch {
	case !ok && ev.SessionID != 0:
		// Deleted between an attempt that started the session and this one.
		return uc.finish(ctx, ev, fmt.Sprintf("started session %d; its trigger was deleted before its thread was bound", ev.SessionID))
	case !ok:
		return uc.finish(ctx, ev, "ignored: no trigger fires for it")
	}
	if ev.SessionID == 0 {
		id, err := uc.Boundary.StartSession(ctx, m.User, StartSpec{
			Prompt: prompt, GitRoot: t.GitRoot, AgentRoot: t.AgentRoot, AgentRuntime: t.AgentRuntime,
			Slug: domain.SessionSlug(ev.EventID), PushNotifications: true,
		})
		if refused := (*RefusedError)(nil); errors.As(err, &refused) {
			return uc.refused(ctx, ev, m, fmt.Sprintf("Zimmer could not start a session for trigger #%d: %s", t.ID, refused.Reason))
		}
		if err != nil {
			return "", err
		}
		if err := uc.Repo.SetEventSession(ctx, ev.EventID, id); err != nil {
			return "", err
		}
		ev.SessionID = id
	}
	if err := uc.Repo.BindThread(ctx, domain.SlackThread{ChannelID: m.Channel, ThreadTS: m.TS, SessionID: ev.SessionID, TriggerID: t.ID}, uc.Clock.Now()); err != nil {
		return "", err
	}
	if err := uc.capture(ctx, &ev, m, m.Text); err != nil {
		return "", err
	}
	text := fmt.Sprintf("Started session #%d. Reply in this thread to follow up.", ev.SessionID)
	if uc.SessionURL != nil {
		text = fmt.Sprintf("Started session #%d: <%s|open it in Zimmer>. Reply in this thread to follow up.", ev.SessionID, uc.SessionURL(ev.SessionID))
	}
	if err := uc.reply(ctx, &ev, m.Channel, m.TS, text); err != nil {
		return "", err
	}
	return uc.finish(ctx, ev, fmt.Sprintf("started session %d (trigger #%d)", ev.SessionID, t.ID))
}

func (uc ProcessSlackEvent) followUp(ctx context.Context, ev domain.SlackEvent, m domain.SlackMessage) (string, error) {
	th, found, err := uc.Repo.Thread(ctx, m.Channel, m.ThreadTS)
	switch {
	case err != nil:
		return "", err
	case !found:
		return uc.finish(ctx, ev, "ignored: a reply in a thread no session started")
	case th.TriggerID == 0:
		return uc.finish(ctx, ev, fmt.Sprintf("ignored: the trigger that started session %d was deleted; its thread takes no follow-ups", th.SessionID))
	}
	t, err := uc.Repo.Trigger(ctx, th.TriggerID)
	if errors.Is(err, domain.ErrTriggerNotFound) {
		return uc.finish(ctx, ev, fmt.Sprintf("ignored: the trigger that started session %d was deleted; its thread takes no follow-ups", th.SessionID))
	}
	if err != nil {
		return "", err
	}
	if !t.Allows(m.User) {
		return uc.finish(ctx, ev, fmt.Sprintf("ignored: %s is not allowed by trigger #%d", m.User, t.ID))
	}
	prompt := m.FollowUpPrompt()
	if prompt == "" {
		return uc.finish(ctx, ev, "ignored: a reply that only mentions the app")
	}
	if ev.SessionID == 0 {
		if err := uc.Repo.SetEventSession(ctx, ev.EventID, th.SessionID); err != nil {
			return "", err
		}
		ev.SessionID = th.SessionID
	}
	how := "followed up"
	if !ev.FollowedUp {
		queued, answer, err := uc.Boundary.FollowUp(ctx, m.User, th.SessionID, prompt, domain.EventIdempotencyKey(ev.EventID))
		if refused := (*RefusedError)(nil); errors.As(err, &refused) {
			return uc.refused(ctx, ev, m, fmt.Sprintf("Zimmer could not follow up session #%d: %s", th.SessionID, refused.Reason))
		}
		if err != nil {
			return "", err
		}
		if queued {
			how = "queued a follow-up for"
		}
		if err := uc.Repo.MarkFollowedUp(ctx, ev.EventID, answer, uc.Clock.Now()); err != nil {
			return "", err
		}
		ev.FollowedUp, ev.FollowUpAnswer = true, answer
	}
	if err := uc.capture(ctx, &ev, m, m.Text); err != nil {
		return "", err
	}
	// The person who wrote it is told what became of it — it runs now, or
	// waits behind the running turn — in the queue's words, kept with the
	// step so a retry tells the same.
	if err := uc.reply(ctx, &ev, m.Channel, m.ThreadTS, ev.FollowUpAnswer); err != nil {
		return "", err
	}
	return uc.finish(ctx, ev, fmt.Sprintf("%s session %d", how, th.SessionID))
}

// capture records what the sender said as their human message on the
// event's session, through the boundary lineage believes. A sender the
// roster does not map records nothing, and that is no failure.
func (uc ProcessSlackEvent) capture(ctx context.Context, ev *domain.SlackEvent, m domain.SlackMessage, said string) error {
	if ev.Captured {
		return nil
	}
	permalink := ""
	if uc.API != nil {
		link, err := uc.API.Permalink(ctx, m.Channel, m.TS)
		switch {
		case errors.Is(err, ErrSlackPermanent):
			// The message is gone or out of reach: what was said is still
			// evidence, recorded without its link.
		case err != nil:
			return fmt.Errorf("permalink of %s/%s: %w", m.Channel, m.TS, err)
		default:
			permalink = link
		}
	}
	occurred := m.OccurredAt()
	if occurred.IsZero() {
		occurred = ev.ReceivedAt
	}
	if _, _, err := uc.Boundary.RecordHumanMessage(ctx, m.User, SlackHumanMessage{
		SessionID: ev.SessionID, Provenance: m.Provenance(), Content: said, Permalink: permalink, OccurredAt: occurred,
		IdempotencyKey: domain.EventIdempotencyKey(ev.EventID),
	}); err != nil {
		var refused *RefusedError
		if !errors.As(err, &refused) {
			return err
		}
		// Lineage refused the record itself (too long, say): the session
		// runs; the evidence is not there, and the outcome says so.
		ev.Outcome = "not recorded: " + refused.Reason
	}
	ev.Captured = true
	return uc.Repo.MarkEventStep(ctx, ev.EventID, StepCaptured, uc.Clock.Now())
}

// reply posts text in the thread once; without a bot token it posts
// nothing, and nothing is what an empty text (a follow-up done before its
// answer was kept) posts.
func (uc ProcessSlackEvent) reply(ctx context.Context, ev *domain.SlackEvent, channel, threadTS, text string) error {
	if ev.Replied || uc.API == nil || text == "" {
		return nil
	}
	err := uc.API.PostMessage(ctx, channel, threadTS, text)
	if err != nil && !errors.Is(err, ErrSlackPermanent) {
		return fmt.Errorf("reply in %s/%s: %w", channel, threadTS, err)
	}
	ev.Replied = true
	return uc.Repo.MarkEventStep(ctx, ev.EventID, StepReplied, uc.Clock.Now())
}

// refused ends the event with another context's refusal, told in the
// thread.
func (uc ProcessSlackEvent) refused(ctx context.Context, ev domain.SlackEvent, m domain.SlackMessage, why string) (string, error) {
	thread := m.ThreadTS
	if thread == "" {
		thread = m.TS
	}
	if err := uc.reply(ctx, &ev, m.Channel, thread, why); err != nil {
		return "", err
	}
	return uc.finish(ctx, ev, "refused: "+why)
}

func (uc ProcessSlackEvent) finish(ctx context.Context, ev domain.SlackEvent, outcome string) (string, error) {
	if ev.Outcome != "" {
		outcome += "; " + ev.Outcome
	}
	if err := uc.Repo.FinishEvent(ctx, ev.EventID, outcome, uc.Clock.Now()); err != nil {
		return "", err
	}
	return outcome, nil
}

// PostToThread is the push of a session started from Slack into its
// thread: the needs_input and failure pushes only.
type PostToThread struct {
	Repo SlackRepository
	API  SlackWebAPI
}

// Handle posts text in session id's thread, if it has one.
func (uc PostToThread) Handle(ctx context.Context, sessionID int64, text string) error {
	th, found, err := uc.Repo.ThreadOfSession(ctx, sessionID)
	if err != nil || !found {
		return err
	}
	return uc.API.PostMessage(ctx, th.ChannelID, th.ThreadTS, text)
}

// Slack is the Slack use cases the API serves.
type Slack struct {
	Triggers SlackTriggers
	Accept   AcceptSlackEvent
}
