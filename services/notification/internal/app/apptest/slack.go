package apptest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
)

// Slack is an in-memory app.SlackRepository.
type Slack struct {
	mu       sync.Mutex
	triggers []domain.SlackTrigger
	nextID   int64
	events   map[string]*domain.SlackEvent
	threads  []domain.SlackThread
}

var _ app.SlackRepository = (*Slack)(nil)

// NewSlack returns an empty repository.
func NewSlack() *Slack { return &Slack{events: map[string]*domain.SlackEvent{}} }

// CreateTrigger implements app.SlackRepository.
func (f *Slack) CreateTrigger(_ context.Context, t domain.SlackTrigger) (domain.SlackTrigger, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	t.ID = f.nextID
	f.triggers = append(f.triggers, t)
	return t, nil
}

// ListTriggers implements app.SlackRepository.
func (f *Slack) ListTriggers(context.Context) ([]domain.SlackTrigger, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.triggers), nil
}

// Trigger implements app.SlackRepository.
func (f *Slack) Trigger(_ context.Context, id int64) (domain.SlackTrigger, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.triggers {
		if t.ID == id {
			return t, nil
		}
	}
	return domain.SlackTrigger{}, fmt.Errorf("slack trigger %d: %w", id, domain.ErrTriggerNotFound)
}

// DeleteTrigger implements app.SlackRepository, unbinding its threads'
// trigger as the store's ON DELETE SET NULL does.
func (f *Slack) DeleteTrigger(_ context.Context, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.triggers, func(t domain.SlackTrigger) bool { return t.ID == id })
	if i < 0 {
		return fmt.Errorf("slack trigger %d: %w", id, domain.ErrTriggerNotFound)
	}
	f.triggers = slices.Delete(f.triggers, i, i+1)
	for j := range f.threads {
		if f.threads[j].TriggerID == id {
			f.threads[j].TriggerID = 0
		}
	}
	return nil
}

// AcceptEvent implements app.SlackRepository.
func (f *Slack) AcceptEvent(_ context.Context, e domain.SlackEvent) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.events[e.EventID]; ok {
		return false, nil
	}
	f.events[e.EventID] = &e
	return true, nil
}

// Event implements app.SlackRepository.
func (f *Slack) Event(_ context.Context, id string) (domain.SlackEvent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.events[id]
	if !ok {
		return domain.SlackEvent{}, fmt.Errorf("no slack event %s", id)
	}
	return *e, nil
}

// SetEventSession implements app.SlackRepository.
func (f *Slack) SetEventSession(_ context.Context, id string, sessionID int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events[id].SessionID = sessionID
	return nil
}

// MarkFollowedUp implements app.SlackRepository.
func (f *Slack) MarkFollowedUp(_ context.Context, id, answer string, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.events[id]; !e.FollowedUp {
		e.FollowedUp, e.FollowUpAnswer = true, answer
	}
	return nil
}

// MarkEventStep implements app.SlackRepository.
func (f *Slack) MarkEventStep(_ context.Context, id string, step app.SlackEventStep, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.events[id]
	switch step {
	case app.StepCaptured:
		e.Captured = true
	case app.StepReplied:
		e.Replied = true
	default:
		return fmt.Errorf("unknown slack event step %q", step)
	}
	return nil
}

// FinishEvent implements app.SlackRepository.
func (f *Slack) FinishEvent(_ context.Context, id, outcome string, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events[id].Processed, f.events[id].Outcome = true, outcome
	return nil
}

// BindThread implements app.SlackRepository.
func (f *Slack) BindThread(_ context.Context, t domain.SlackThread, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, have := range f.threads {
		if (have.ChannelID == t.ChannelID && have.ThreadTS == t.ThreadTS) || have.SessionID == t.SessionID {
			return nil
		}
	}
	f.threads = append(f.threads, t)
	return nil
}

// Thread implements app.SlackRepository.
func (f *Slack) Thread(_ context.Context, channelID, threadTS string) (domain.SlackThread, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.threads {
		if t.ChannelID == channelID && t.ThreadTS == threadTS {
			return t, true, nil
		}
	}
	return domain.SlackThread{}, false, nil
}

// ThreadOfSession implements app.SlackRepository.
func (f *Slack) ThreadOfSession(_ context.Context, sessionID int64) (domain.SlackThread, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.threads {
		if t.SessionID == sessionID {
			return t, true, nil
		}
	}
	return domain.SlackThread{}, false, nil
}

// SlackBoundary is an in-memory app.SlackBoundary: sessions started by
// slug, follow-ups by key, and a roster of Slack user IDs; messages are
// recorded once per idempotency key, as lineage records them.
type SlackBoundary struct {
	mu sync.Mutex
	// Roster maps Slack user IDs to roster keys: who is recorded.
	Roster map[string]string
	// Running makes follow-ups queue rather than deliver.
	Running bool
	// FailNext fails the next call with it, once.
	FailNext error

	Sessions  map[string]int64 // slug → id
	FollowUps map[string]string
	// RecordCalls are the keys RecordHumanMessage was called with, a
	// retry's included; Recorded what it recorded.
	RecordCalls []string
	Recorded    []app.SlackHumanMessage
}

var _ app.SlackBoundary = (*SlackBoundary)(nil)

func (f *SlackBoundary) fail() error {
	err := f.FailNext
	f.FailNext = nil
	return err
}

// StartSession implements app.SlackBoundary.
func (f *SlackBoundary) StartSession(_ context.Context, _ string, spec app.StartSpec) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return 0, err
	}
	if f.Sessions == nil {
		f.Sessions = map[string]int64{}
	}
	if id, ok := f.Sessions[spec.Slug]; ok {
		return id, nil
	}
	id := int64(len(f.Sessions) + 1)
	f.Sessions[spec.Slug] = id
	return id, nil
}

// FollowUp implements app.SlackBoundary, answering in the fake's own
// words (the queue's are the queue's).
func (f *SlackBoundary) FollowUp(_ context.Context, _ string, sessionID int64, prompt, key string) (bool, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return false, "", err
	}
	if f.FollowUps == nil {
		f.FollowUps = map[string]string{}
	}
	f.FollowUps[key] = prompt
	if f.Running {
		return true, fmt.Sprintf("fake queue: queued behind session %d's turn", sessionID), nil
	}
	return false, fmt.Sprintf("fake queue: session %d's turn now", sessionID), nil
}

// RecordHumanMessage implements app.SlackBoundary.
func (f *SlackBoundary) RecordHumanMessage(_ context.Context, slackUserID string, m app.SlackHumanMessage) (bool, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail(); err != nil {
		return false, "", err
	}
	f.RecordCalls = append(f.RecordCalls, m.IdempotencyKey)
	if m.IdempotencyKey != "" && slices.ContainsFunc(f.Recorded, func(r app.SlackHumanMessage) bool { return r.IdempotencyKey == m.IdempotencyKey }) {
		return true, "", nil
	}
	if _, ok := f.Roster[slackUserID]; !ok {
		return false, "slack user " + slackUserID + " belongs to nobody in the users roster", nil
	}
	f.Recorded = append(f.Recorded, m)
	return true, "", nil
}

// SlackWebAPI is an in-memory app.SlackWebAPI recording posts.
type SlackWebAPI struct {
	mu    sync.Mutex
	Posts []string // channel/thread_ts: text
}

var _ app.SlackWebAPI = (*SlackWebAPI)(nil)

// PostMessage implements app.SlackWebAPI.
func (f *SlackWebAPI) PostMessage(_ context.Context, channel, threadTS, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Posts = append(f.Posts, channel+"/"+threadTS+": "+text)
	return nil
}

// Permalink implements app.SlackWebAPI.
func (f *SlackWebAPI) Permalink(_ context.Context, channel, ts string) (string, error) {
	return "https://acme.slack.com/archives/" + channel + "/p" + ts, nil
}
