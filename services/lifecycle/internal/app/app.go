// Package app holds the lifecycle use cases. Each is a small type depending
// only on domain ports, so it runs the same against Postgres or a fake.
package app

import (
	"context"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// SessionRepository stores sessions. Writes record their domain events in
// the same transaction (the outbox), so a change is never committed without
// its announcement.
type SessionRepository interface {
	// Create locks the parent (when parentID is set) so it cannot be
	// deleted mid-create, passes it to build (nil when absent or unknown),
	// inserts the built session and records announce(created).
	Create(ctx context.Context, parentID *int64,
		build func(parent *domain.Session) (domain.Session, error),
		announce func(created domain.Session) []domain.Fact,
	) (domain.Session, error)
	// Get returns the session a reference names, or a *domain.NotFoundError.
	Get(ctx context.Context, ref domain.SessionRef) (domain.Session, error)
	// List returns one page of the sessions matching f, newest first.
	List(ctx context.Context, f domain.ListFilter) (domain.Page, error)
	// Transition locks the session, passes it and its armed wake-ups to
	// decide and persists the outcome — state, timeline, event stream and
	// announcements — in one transaction. When decide refuses with a
	// *domain.TransitionError, the refusal is written to the timeline and
	// nothing else changes.
	Transition(ctx context.Context, ref domain.SessionRef,
		decide func(domain.Session, domain.Wakes) (domain.Outcome, error)) (domain.Outcome, error)
	// Timeline returns the session's timeline, oldest first.
	Timeline(ctx context.Context, ref domain.SessionRef) ([]domain.TimelineLine, error)
	// Events returns the session's event stream, oldest first.
	Events(ctx context.Context, ref domain.SessionRef) ([]domain.StreamEvent, error)
	// Update locks the session and saves change's result with its timeline
	// note and announcement.
	Update(ctx context.Context, ref domain.SessionRef,
		change func(domain.Session) (domain.Session, domain.TimelineEntry, error)) (domain.Session, error)
	// Delete removes the session for good and announces it.
	Delete(ctx context.Context, ref domain.SessionRef) error
}

// SettingsRepository stores the experimental settings.
type SettingsRepository interface {
	Settings(ctx context.Context) (domain.Settings, error)
	// UpdateSettings changes the settings given (nil keeps one).
	UpdateSettings(ctx context.Context, provenanceViaMCP *bool) (domain.Settings, error)
}

// UpdateSession patches a session's editable fields.
type UpdateSession struct {
	Repo  SessionRepository
	Clock domain.Clock
}

// Handle validates the patch and applies it under the session's lock.
func (uc UpdateSession) Handle(ctx context.Context, ref string, p domain.Patch) (domain.Session, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Session{}, err
	}
	if err := p.Validate(); err != nil {
		return domain.Session{}, err
	}
	return uc.Repo.Update(ctx, r, func(s domain.Session) (domain.Session, domain.TimelineEntry, error) {
		next, note := p.Apply(s, uc.Clock.Now())
		return next, note, nil
	})
}

// DeleteSession hard-deletes a session.
type DeleteSession struct{ Repo SessionRepository }

// Handle parses ref and deletes the session.
func (uc DeleteSession) Handle(ctx context.Context, ref string) error {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return err
	}
	return uc.Repo.Delete(ctx, r)
}

// CreateSession creates a session in the waiting state.
type CreateSession struct {
	Repo  SessionRepository
	Clock domain.Clock
}

// Handle validates n, creates the session and announces it.
func (uc CreateSession) Handle(ctx context.Context, n domain.NewSession) (domain.Session, error) {
	if err := n.Validate(); err != nil {
		return domain.Session{}, err
	}
	return uc.Repo.Create(ctx, n.ParentSessionID,
		func(parent *domain.Session) (domain.Session, error) { return n.Build(parent, uc.Clock.Now()) },
		func(created domain.Session) []domain.Fact {
			return []domain.Fact{domain.SessionCreated{Session: created}}
		},
	)
}

// GetSession reads one session by id or slug.
type GetSession struct{ Repo SessionRepository }

// Handle parses ref and loads the session.
func (uc GetSession) Handle(ctx context.Context, ref string) (domain.Session, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Session{}, err
	}
	return uc.Repo.Get(ctx, r)
}

// ListSessions lists sessions with the dashboard's filter semantics.
type ListSessions struct{ Repo SessionRepository }

// Handle validates the request and lists one page.
func (uc ListSessions) Handle(ctx context.Context, req domain.ListRequest) (domain.Page, error) {
	f, err := req.Filter()
	if err != nil {
		return domain.Page{}, err
	}
	return uc.Repo.List(ctx, f)
}

// Verb is what a caller asks of a session's state machine: one of the
// machine's events, or a command that chooses its event from the session.
type Verb string

// Commands beyond the raw events.
const (
	// VerbSleep sleeps a needs_input session now and defers a running one's.
	VerbSleep Verb = "sleep"
	// VerbUnarchive restores to the state chosen from the session's history.
	VerbUnarchive Verb = "unarchive"
	// VerbRestart re-runs a failed or idle session: a deliberate resume.
	VerbRestart Verb = "restart"
)

// TransitionSession applies a verb to one session.
type TransitionSession struct {
	Repo           SessionRepository
	Clock          domain.Clock
	TrashRetention time.Duration
}

// Handle parses ref and applies verb with the details in cmd: a command
// chooses its event from the session; any other verb is a raw event (Fire).
func (uc TransitionSession) Handle(ctx context.Context, ref string, verb Verb, cmd domain.Command) (domain.Outcome, error) {
	if verb != VerbSleep && verb != VerbUnarchive && verb != VerbRestart {
		return uc.Fire(ctx, ref, string(verb), cmd)
	}
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Outcome{}, err
	}
	return uc.Repo.Transition(ctx, r, func(s domain.Session, wakes domain.Wakes) (domain.Outcome, error) {
		env := uc.env(wakes)
		switch verb {
		case VerbSleep:
			return domain.Sleep(s, cmd, env)
		case VerbUnarchive:
			cmd.Event = domain.UnarchiveEvent(s)
		default: // VerbRestart
			cmd.Event = domain.EventResume
		}
		return domain.Apply(s, cmd, env)
	})
}

// Fire applies one of the machine's events exactly as the machine states
// it: nothing is chosen or deferred, so sleep on a running session is
// refused rather than deferred, and an unarchive names its target. It is
// the machine's low-level driver; the verbs above are what callers should
// prefer.
func (uc TransitionSession) Fire(ctx context.Context, ref string, event string, cmd domain.Command) (domain.Outcome, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Outcome{}, err
	}
	e, err := domain.ParseEvent(event)
	if err != nil {
		return domain.Outcome{}, &validation.Error{Violations: []validation.FieldViolation{{Field: "event", Reason: err.Error()}}}
	}
	cmd.Event = e
	return uc.Repo.Transition(ctx, r, func(s domain.Session, wakes domain.Wakes) (domain.Outcome, error) {
		return domain.Apply(s, cmd, uc.env(wakes))
	})
}

func (uc TransitionSession) env(wakes domain.Wakes) domain.Env {
	return domain.Env{Now: uc.Clock.Now(), Wakes: wakes, TrashRetention: uc.TrashRetention}
}

// SessionHistory reads a session's timeline and event stream.
type SessionHistory struct{ Repo SessionRepository }

// Timeline returns the session's timeline.
func (uc SessionHistory) Timeline(ctx context.Context, ref string) ([]domain.TimelineLine, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return nil, err
	}
	return uc.Repo.Timeline(ctx, r)
}

// Events returns the session's event stream.
func (uc SessionHistory) Events(ctx context.Context, ref string) ([]domain.StreamEvent, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return nil, err
	}
	return uc.Repo.Events(ctx, r)
}

// Sessions bundles the use cases the transport adapters call.
type Sessions struct {
	Create     CreateSession
	Get        GetSession
	List       ListSessions
	Transition TransitionSession
	History    SessionHistory
	Update     UpdateSession
	Delete     DeleteSession
}

// DefaultTrashRetention is the spec's TRASH_RETENTION_PERIOD.
const DefaultTrashRetention = 4 * 24 * time.Hour

// NewSessions wires the use cases over one repository and clock.
func NewSessions(repo SessionRepository, clock domain.Clock, trashRetention time.Duration) Sessions {
	if trashRetention <= 0 {
		trashRetention = DefaultTrashRetention
	}
	return Sessions{
		Create:     CreateSession{Repo: repo, Clock: clock},
		Get:        GetSession{Repo: repo},
		List:       ListSessions{Repo: repo},
		Transition: TransitionSession{Repo: repo, Clock: clock, TrashRetention: trashRetention},
		History:    SessionHistory{Repo: repo},
		Update:     UpdateSession{Repo: repo, Clock: clock},
		Delete:     DeleteSession{Repo: repo},
	}
}

// ExperimentalSettings reads and changes the experimental settings.
type ExperimentalSettings struct{ Repo SettingsRepository }

// Get returns the settings.
func (uc ExperimentalSettings) Get(ctx context.Context) (domain.Settings, error) {
	return uc.Repo.Settings(ctx)
}

// Update changes the settings given.
func (uc ExperimentalSettings) Update(ctx context.Context, provenanceViaMCP *bool) (domain.Settings, error) {
	return uc.Repo.UpdateSettings(ctx, provenanceViaMCP)
}
