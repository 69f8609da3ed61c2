// Package app holds the lifecycle use cases. Each is a small type depending
// only on domain ports, so it runs the same against Postgres or a fake.
package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// SessionRepository stores sessions. Every write has one shape: in one
// transaction it locks what the decision reads, lets a pure function decide,
// and writes everything decided — the row, its timeline lines, its event
// stream and its announcements (the outbox) — in one batch, so a change never
// commits without its announcement.
type SessionRepository interface {
	// Create locks the parent (when parentID is set) FOR KEY SHARE, so it
	// cannot be deleted mid-create but can still change, passes it to build
	// (nil when absent or unknown), and inserts the built session with its
	// SessionCreated announcement.
	Create(ctx context.Context, parentID *int64,
		build func(parent *domain.Session) (domain.Session, error)) (domain.Session, error)
	// Update locks the session FOR UPDATE, passes it and its armed wake-ups
	// to decide, and writes the Change decided. It returns the change as
	// committed (with the session's new version). Concurrent updates of one
	// session queue on the row lock; other sessions are never blocked. When
	// the change is a refusal, its timeline line is committed and the
	// refusal is returned as the error.
	Update(ctx context.Context, ref domain.SessionRef,
		decide func(domain.Session, domain.Wakes) (Change, error)) (Change, error)
	// Get returns the session a reference names, or a *domain.NotFoundError.
	Get(ctx context.Context, ref domain.SessionRef) (domain.Session, error)
	// List returns one page of the sessions matching f, newest first.
	List(ctx context.Context, f domain.ListFilter) (domain.Page, error)
	// Timeline returns the session's timeline, oldest first.
	Timeline(ctx context.Context, ref domain.SessionRef) ([]domain.TimelineLine, error)
	// Events returns the session's event stream, oldest first.
	Events(ctx context.Context, ref domain.SessionRef) ([]domain.StreamEvent, error)
	// Deliver is Update of session id with the record of deliveryID read
	// under the session's lock too (nil when no delivery has that id), so a
	// retried delivery sees the first one once it committed.
	Deliver(ctx context.Context, id int64, deliveryID string,
		decide func(domain.Session, domain.Wakes, *DeliveryRecord) (Change, error)) (Change, error)
	// UpdateOnce is Update with the record of the transition applied under
	// key read under the session's lock too (nil when none has that key),
	// so a retried transition sees the first one once it committed. A
	// Transitioned change it commits is recorded under key.
	UpdateOnce(ctx context.Context, ref domain.SessionRef, key string,
		decide func(domain.Session, domain.Wakes, *TransitionRecord) (Change, error)) (Change, error)
	StatusSummaryForks
}

// TransitionRecord is a transition lifecycle applied under its caller's
// idempotency key: the session, the event and the state it moved from.
type TransitionRecord struct {
	Key       string
	SessionID int64
	Event     domain.Event
	From      domain.Status
}

// DeliveryRecord is a delivery lifecycle applied: its id, the session and
// the job its turn runs under.
type DeliveryRecord struct {
	ID        string
	SessionID int64
	JobID     string
}

// Change is what one decision writes under the session's lock. Exactly one
// field is set.
type Change struct {
	// Transitioned is a state-machine outcome. It writes the columns a
	// transition owns (status, markers, the clock, the archive columns,
	// updated_at — never the editable ones), its timeline lines, its stream
	// entries, the SessionUpdated announcement and one event per effect an
	// owning context carries out, and, when the outcome asks for them, the
	// experimental-setting flags, whose failure never stops the transition.
	Transitioned *domain.Outcome
	// TransitionKey, beside Transitioned, records the transition under its
	// caller's idempotency key (TransitionRecord), which answers its
	// retries.
	TransitionKey string
	// Edited is a patch applied: it writes the editable columns and the note
	// naming what changed, and announces SessionEdited.
	Edited *Edit
	// Deleted removes the session for good (its timeline, stream and flags
	// go with it; children keep existing with no recorded parent) and
	// announces SessionDeleted.
	Deleted bool
	// Refused is a transition the machine refused: nothing changes but a
	// refusal line on the timeline, which is what lets "why didn't my pause
	// work?" be answered from the session.
	Refused *Refusal
	// Delivered is a prompt made the session's next turn (domain.Deliver).
	// Its outcome is written as a transition's — a handover or a delivery
	// after an interrupt applies no event, like a deferred sleep — with the
	// goal it sets and the record of its delivery id (DeliveryRecord).
	Delivered *Delivery
	// Marked is the session with its markers changed outside the state
	// machine — one more attempt of the queue's after-pause drain counted
	// (domain.RecordDrainAttempt), a recovery abandoned
	// (domain.AbandonRecovery), the trash deadline of a session nothing is
	// retained of dropped (domain.ClearTrashExpiry) — and the timeline
	// lines saying so. It announces nothing: no other context acts on these.
	Marked *Marking
	// Armed is a trigger inserted (triggers.go), with what arming did to
	// the session.
	Armed *Arming
	// Triggered is a trigger moved on (firing, fired, cancelled), with its
	// timeline lines.
	Triggered *TriggerMove
	// Nothing writes nothing: a delivery refused or answered before, a
	// drain attempt not counted.
	Nothing bool
}

// Arming inserts Trigger (its id drawn under the session's lock). Outcome
// is what arming did to the session — a sleep now or deferred, a pause and
// sleep — written as a transition; nil when the session stays as it is
// (asleep already, or a watcher), and then Timeline is written alone.
// Supersedes are the session's own armed one-time wake-ups a Pause Until
// cancels in the same commit (it replaces them: never two armed, never
// none in between). A one-time trigger is announced to the triggers' timers.
type Arming struct {
	Trigger domain.Trigger
	// Session is the session as committed (the repository sets it).
	Session    domain.Session
	Outcome    *domain.Outcome
	Timeline   []domain.TimelineEntry
	At         time.Time
	Supersedes []int64
}

// TriggerMove writes a trigger's new status (and when), its session's
// timeline lines and, when set, the session's markers.
type TriggerMove struct {
	Trigger  domain.Trigger
	Timeline []domain.TimelineEntry
	At       time.Time
	Markers  *domain.Markers
	// AsksFirstTurn: the runner is asked for the session's first turn
	// (domain.Firing.AsksFirstTurn).
	AsksFirstTurn bool
}

// Marking is a session whose markers changed, with its timeline lines.
type Marking struct {
	Session  domain.Session
	Timeline []domain.TimelineEntry
	At       time.Time
}

// Delivery is a delivery's outcome and the id it is recorded under.
type Delivery struct {
	ID      string
	Outcome domain.Outcome
}

// Edit is a session with its editable fields changed and the timeline note
// naming them.
type Edit struct {
	Session domain.Session
	Note    domain.TimelineEntry
}

// Refusal is a refused transition, when it was refused and who asked
// (domain.RefusalLine names them).
type Refusal struct {
	Err *domain.TransitionError
	At  time.Time
	By  string
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
	Clock clock.Clock
}

// Handle validates the patch and applies it under the session's lock; by
// is the principal making the call, named on the note (domain.Attributed).
func (uc UpdateSession) Handle(ctx context.Context, ref string, p domain.Patch, by string) (domain.Session, error) {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Session{}, err
	}
	if err := p.Validate(); err != nil {
		return domain.Session{}, err
	}
	c, err := uc.Repo.Update(ctx, r, func(s domain.Session, _ domain.Wakes) (Change, error) {
		next, note, err := p.Apply(s, uc.Clock.Now(), by)
		if err != nil {
			return Change{}, err
		}
		return Change{Edited: &Edit{Session: next, Note: note}}, nil
	})
	if err != nil {
		return domain.Session{}, err
	}
	return c.Edited.Session, nil
}

// DeleteSession hard-deletes a session.
type DeleteSession struct{ Repo SessionRepository }

// Handle parses ref and deletes the session.
func (uc DeleteSession) Handle(ctx context.Context, ref string) error {
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return err
	}
	_, err = uc.Repo.Update(ctx, r, func(domain.Session, domain.Wakes) (Change, error) {
		return Change{Deleted: true}, nil
	})
	return err
}

// CreateSession creates a session in the waiting state.
type CreateSession struct {
	Repo  SessionRepository
	Clock clock.Clock
}

// Handle validates n, creates the session and announces it.
func (uc CreateSession) Handle(ctx context.Context, n domain.NewSession) (domain.Session, error) {
	if err := n.Validate(); err != nil {
		return domain.Session{}, err
	}
	return uc.Repo.Create(ctx, n.ParentSessionID,
		func(parent *domain.Session) (domain.Session, error) { return n.Build(parent, uc.Clock.Now()) })
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
type ListSessions struct {
	Repo SessionRepository
	// Transcripts answers the transcript filter (the runner's full-text
	// index); nil when no runner is configured, and the filter is refused.
	Transcripts TranscriptSearcher
}

// TranscriptSearcher finds the sessions whose transcript holds words.
type TranscriptSearcher interface {
	// SearchTranscripts returns the matching sessions, the most recently
	// matching first, at most limit of them.
	SearchTranscripts(ctx context.Context, words string, limit int) ([]int64, error)
}

// Handle validates the request and lists one page. A transcript filter asks
// the runner first and narrows the list to the sessions it names.
func (uc ListSessions) Handle(ctx context.Context, req domain.ListRequest) (domain.Page, error) {
	f, err := req.Filter()
	if err != nil {
		return domain.Page{}, err
	}
	if f.Transcript != "" {
		if uc.Transcripts == nil {
			return domain.Page{}, &domain.PreconditionError{Reason: "transcript search needs the runner, and this lifecycle has none configured (LIFECYCLE_RUNNER_ADDR); search without it"}
		}
		ids, err := uc.Transcripts.SearchTranscripts(ctx, f.Transcript, domain.MaxTranscriptMatches)
		if err != nil {
			return domain.Page{}, err
		}
		f.SessionIDs = append([]int64{}, ids...)
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
	// VerbUnarchive is the restore: the session lands in needs_input,
	// whatever state it was archived from (domain.EventRestore).
	VerbUnarchive Verb = "unarchive"
	// VerbRestart re-runs a failed or idle session: a deliberate resume.
	VerbRestart Verb = "restart"
)

// TransitionSession applies a verb to one session.
type TransitionSession struct {
	Repo           SessionRepository
	Clock          clock.Clock
	TrashRetention time.Duration
	// Turns halts a running session's turn before a pause or an archive
	// (turns.go); nil when no runner is configured.
	Turns TurnInterrupter
	// Queue guards an archive (archive.go); nil when no queue is
	// configured.
	Queue QueueSealer
	// Clones says what an unarchive does with the session's clone; nil
	// when no runner is configured.
	Clones CloneKeeper
}

// CloneKeeper reads the state of a session's clone from the runner that
// keeps it: "" when the runner made none.
type CloneKeeper interface {
	CloneState(ctx context.Context, sessionID int64) (string, error)
}

// CloneRestoration says what the unarchive of session id does with its
// clone. It never fails the unarchive, which has committed: a runner that
// cannot be asked answers "not restored" and is logged by the caller.
func (uc TransitionSession) CloneRestoration(ctx context.Context, sessionID int64) (domain.CloneRestoration, error) {
	if uc.Clones == nil {
		return domain.CloneRestoration{}, nil
	}
	state, err := uc.Clones.CloneState(ctx, sessionID)
	if err != nil {
		return domain.CloneRestoration{}, err
	}
	return domain.RestorationOf(state), nil
}

// Handle parses ref and applies verb with the details in cmd: archive is
// the guarded archive (archive.go); a command chooses its event from the
// session; any other verb is a raw event (Fire).
func (uc TransitionSession) Handle(ctx context.Context, ref string, verb Verb, cmd domain.Command) (domain.Outcome, error) {
	if verb == Verb(domain.EventArchive) {
		return uc.archive(ctx, ref, cmd)
	}
	if err := uc.haltTurnFirst(ctx, ref, verb); err != nil {
		return domain.Outcome{}, err
	}
	if verb != VerbSleep && verb != VerbUnarchive && verb != VerbRestart {
		return uc.Fire(ctx, ref, string(verb), cmd)
	}
	r, err := domain.ParseSessionRef(ref)
	if err != nil {
		return domain.Outcome{}, err
	}
	if err := cmd.Validate(); err != nil {
		return domain.Outcome{}, err
	}
	switch verb {
	case VerbSleep:
		return uc.apply(ctx, r, cmd.Actor.By, func(s domain.Session, env domain.Env) (domain.Outcome, error) {
			return domain.Sleep(s, cmd, env)
		})
	case VerbUnarchive:
		cmd.Event = domain.EventRestore
	default: // VerbRestart
		cmd.Event = domain.EventResume
	}
	// A restart may carry its caller's idempotency key (a resubmitted
	// form, a retried request): applied once, like a raw event's.
	return uc.applyOnce(ctx, r, cmd, func(s domain.Session, env domain.Env) (domain.Outcome, error) {
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
	if err := cmd.Validate(); err != nil {
		return domain.Outcome{}, err
	}
	cmd.Event = e
	return uc.applyOnce(ctx, r, cmd, func(s domain.Session, env domain.Env) (domain.Outcome, error) {
		return domain.Apply(s, cmd, env)
	})
}

// applyOnce is apply for a command that may carry an idempotency key: the
// change is recorded under it, and a call with a key already applied to
// this event and session is answered as already applied (the session as it
// stands), changing nothing. A key applied to another session or event is
// a caller's mistake, refused.
func (uc TransitionSession) applyOnce(ctx context.Context, r domain.SessionRef, cmd domain.Command,
	decide func(domain.Session, domain.Env) (domain.Outcome, error),
) (domain.Outcome, error) {
	key := cmd.IdempotencyKey
	if key == "" {
		return uc.apply(ctx, r, cmd.Actor.By, decide)
	}
	var answer domain.Outcome
	c, err := uc.Repo.UpdateOnce(ctx, r, key, func(s domain.Session, wakes domain.Wakes, prior *TransitionRecord) (Change, error) {
		answer = domain.Outcome{} // a retried transaction decides afresh
		if prior != nil {
			if prior.SessionID != s.ID || prior.Event != cmd.Event {
				return Change{}, &domain.PreconditionError{Reason: fmt.Sprintf(
					"idempotency key %q was used for %s of session %d, not %s of session %d; a key names one transition",
					key, prior.Event, prior.SessionID, cmd.Event, s.ID)}
			}
			answer = domain.Outcome{Session: s, From: prior.From, AlreadyApplied: true}
			return Change{Nothing: true}, nil
		}
		c, err := uc.decide(s, wakes, cmd.Actor.By, decide)
		c.TransitionKey = key
		return c, err
	})
	switch {
	case err != nil:
		return domain.Outcome{}, err
	case c.Transitioned != nil:
		return *c.Transitioned, nil
	}
	return answer, nil
}

// apply decides under the session's lock, from the session, its armed
// wake-ups and the time, and writes the outcome, or the refusal naming by,
// the principal that asked.
func (uc TransitionSession) apply(ctx context.Context, r domain.SessionRef, by string,
	decide func(domain.Session, domain.Env) (domain.Outcome, error),
) (domain.Outcome, error) {
	c, err := uc.Repo.Update(ctx, r, func(s domain.Session, wakes domain.Wakes) (Change, error) {
		return uc.decide(s, wakes, by, decide)
	})
	if err != nil {
		return domain.Outcome{}, err
	}
	return *c.Transitioned, nil
}

// decide is apply's decision under the lock: the outcome, or the refusal
// naming by.
func (uc TransitionSession) decide(s domain.Session, wakes domain.Wakes, by string,
	decide func(domain.Session, domain.Env) (domain.Outcome, error),
) (Change, error) {
	env := domain.Env{Now: uc.Clock.Now(), Wakes: wakes, TrashRetention: uc.TrashRetention, FreshJobID: freshJobID()}
	out, err := decide(s, env)
	var refused *domain.TransitionError
	if errors.As(err, &refused) {
		return Change{Refused: &Refusal{Err: refused, At: env.Now, By: by}}, nil
	}
	if err != nil {
		return Change{}, err
	}
	return Change{Transitioned: &out}, nil
}

// freshJobID names the job of a resume whose caller named none (a restart):
// the runner runs that turn under it, so a running session's running_job_id
// always names its live turn.
func freshJobID() string { return "resume/" + uuid.NewString() }

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
	// Deliver and DrainAttempt are the queue's: a prompt made a turn, an
	// after-pause drain attempt counted.
	Deliver      DeliverTurn
	DrainAttempt RecordDrainAttempt
	Abandon      AbandonRecovery
	// Elicitations lists and answers what agents are blocked on; its
	// Answerer is the runner, set by the composition root.
	Elicitations Elicitations
	// ClearTrash is the runner's: nothing of an archived session is
	// retained any more.
	ClearTrash ClearTrashExpiry
	// Fork and Harvest are the runner's status-summary forks: created, and
	// harvested into their source's status summary.
	Fork    CreateStatusSummaryFork
	Harvest HarvestStatusSummaryFork
}

// DefaultTrashRetention is the spec's TRASH_RETENTION_PERIOD.
const DefaultTrashRetention = 4 * 24 * time.Hour

// NewSessions wires the use cases over one repository and clock.
func NewSessions(repo SessionRepository, clk clock.Clock, trashRetention time.Duration) Sessions {
	if trashRetention <= 0 {
		trashRetention = DefaultTrashRetention
	}
	return Sessions{
		Create:     CreateSession{Repo: repo, Clock: clk},
		Get:        GetSession{Repo: repo},
		List:       ListSessions{Repo: repo},
		Transition: TransitionSession{Repo: repo, Clock: clk, TrashRetention: trashRetention},
		History:    SessionHistory{Repo: repo},
		Update:     UpdateSession{Repo: repo, Clock: clk},
		Delete:     DeleteSession{Repo: repo},

		Deliver:      DeliverTurn{Repo: repo, Clock: clk},
		DrainAttempt: RecordDrainAttempt{Repo: repo, Clock: clk},
		Abandon:      AbandonRecovery{Repo: repo, Clock: clk},
		Elicitations: Elicitations{Repo: repo, Clock: clk},
		ClearTrash:   ClearTrashExpiry{Repo: repo},
		Fork:         CreateStatusSummaryFork{Repo: repo, Forks: repo, Clock: clk},
		// The harvest's archive is the raw event: a system archive, which
		// asks neither the queue nor the runner.
		Harvest: HarvestStatusSummaryFork{Repo: repo, Clock: clk,
			Transition: TransitionSession{Repo: repo, Clock: clk, TrashRetention: trashRetention}},
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
