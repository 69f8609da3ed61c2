// Package app is the queue's use cases over a session's enqueued messages:
// list, enqueue, edit or reorder, delete, and their delivery as turns
// (delivery.go): follow-ups, send now, interrupt, the runner's turn-end
// hand-over, the after-pause drain, and the archive's seal and retirement. A session
// lives in lifecycle, not here: every use case resolves the session named
// (id or slug) through the Sessions port first, which also says whether it
// exists and what state it is in; the Messages port is the queue's own
// store.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

var (
	// ErrSessionNotFound: lifecycle knows no session by the ref given.
	ErrSessionNotFound = errors.New("no such session")
	// ErrForbidden: a session credential named a session other than its
	// own.
	ErrForbidden = errors.New("forbidden")
	// ErrClosed: the session takes no messages (archived, or failed).
	ErrClosed = errors.New("the session takes no messages")
)

// Session is what the queue needs to know of a lifecycle session.
type Session struct {
	ID     int64
	Status string // rules.Status*
	// RunningJobID names the turn a running session runs.
	RunningJobID string
}

// Sessions resolves a session ref (numeric id or slug) through lifecycle;
// an unknown ref is ErrSessionNotFound.
type Sessions interface {
	Get(ctx context.Context, ref string) (Session, error)
}

// Messages is the queue's store (store.Messages).
type Messages interface {
	Enqueue(ctx context.Context, n domain.NewMessage) (domain.Message, bool, error)
	List(ctx context.Context, sessionID int64) ([]domain.Message, error)
	Message(ctx context.Context, sessionID, id int64) (domain.Message, error)
	Keyed(ctx context.Context, sessionID int64, idempotencyKey string) (domain.Message, bool, error)
	Update(ctx context.Context, sessionID, id int64, edit domain.Edit, position int) (domain.Message, error)
	Delete(ctx context.Context, sessionID, id int64) error
	// Deliver claims a pending message under a lease, sends it with
	// nothing held open, and settles the claim (see store).
	Deliver(ctx context.Context, sessionID int64, pick domain.Pick, send domain.Send) (domain.Message, bool, error)
	HandedOver(ctx context.Context, sessionID int64, fromJobID string) (domain.Message, bool, error)
	LockForInterrupt(ctx context.Context, sessionID int64, fn func(ctx context.Context) error) error
	// Abandon ends a deleted session's live messages undelivered.
	Abandon(ctx context.Context, sessionID int64, reason string) ([]domain.Message, error)
	Seal(ctx context.Context, sessionID int64, by string) ([]domain.Message, error)
	Unseal(ctx context.Context, sessionID int64, by string) error
	Retire(ctx context.Context, sessionID int64, archivedAt time.Time) ([]domain.Message, error)
	Reopen(ctx context.Context, sessionID int64, unarchivedAt time.Time) error
}

// Deps are the queue's ports. Sessions and Messages are required; without
// Turns nothing is delivered, and Uncles, Drains and Alerts are optional
// (component tests): no uncle edges, no drain pokes, alerts to the log.
type Deps struct {
	Sessions Sessions
	Messages Messages
	Turns    Turns
	Runner   Interrupter
	Pauser   Pauser
	Uncles   Uncles
	Drains   Drains
	Alerts   alert.Raiser
	Logger   *slog.Logger
}

// WithDrains sets the drain the use cases poke after an enqueue: the drain
// is built over the use cases, so it comes after New.
func (q *Queue) WithDrains(d Drains) { q.drains = d }

// Queue is the enqueued-messages use cases.
type Queue struct {
	sessions Sessions
	messages Messages
	turns    Turns
	runner   Interrupter
	pauser   Pauser
	uncles   Uncles
	drains   Drains
	alerts   alert.Raiser
	logger   *slog.Logger
}

// New returns the use cases over d.
func New(d Deps) *Queue {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Alerts == nil {
		d.Alerts = alert.Log{Logger: d.Logger}
	}
	return &Queue{sessions: d.Sessions, messages: d.Messages, turns: d.Turns, runner: d.Runner, pauser: d.Pauser,
		uncles: d.Uncles, drains: d.Drains, alerts: d.Alerts, logger: d.Logger}
}

// Enqueue is a request to queue a message.
type Enqueue struct {
	SessionRef      string
	Content         string
	Goal            string
	ActingSessionID int64
	IdempotencyKey  string
}

// List is the session's queue. A session credential reads its own
// session's queue, or any with the sessions.read scope.
func (q *Queue) List(ctx context.Context, ref string) ([]domain.Message, error) {
	s, err := q.session(ctx, ref, principal.Principal.MayRead)
	if err != nil {
		return nil, err
	}
	return q.messages.List(ctx, s.ID)
}

// Enqueue appends a caller's message to the session's queue. An archived
// or failed session refuses it: nothing would deliver it. A session
// credential queues onto its own session only, and as that session
// whatever the request declares. The origin is always "caller": Zimmer's
// own notices are queued by the pollers, never through a request.
func (q *Queue) Enqueue(ctx context.Context, in Enqueue) (domain.Message, bool, error) {
	s, err := q.openSession(ctx, in.SessionRef)
	if err != nil {
		return domain.Message{}, false, err
	}
	actingID, err := acting(ctx, in.ActingSessionID)
	if err != nil {
		return domain.Message{}, false, err
	}
	var (
		m       domain.Message
		created bool
		uncle   UncleEdge
	)
	n := domain.NewMessage{
		SessionID: s.ID, Origin: domain.OriginCaller, ActingSessionID: actingID,
		Content: in.Content, Goal: in.Goal, IdempotencyKey: in.IdempotencyKey,
	}
	if err := n.Validate(); err != nil {
		return domain.Message{}, false, err
	}
	err = q.withUncle(ctx, n.ActingSessionID, s.ID, "enqueue", &uncle, func() (bool, error) {
		m, created, err = q.messages.Enqueue(ctx, n)
		return err == nil, err
	})
	if err != nil {
		return domain.Message{}, false, err
	}
	// A session at rest takes it within seconds (the drain); a running one
	// at its turn end, and the drain finds nothing to do.
	q.poke(ctx, s.ID)
	return m, created, nil
}

// Update edits a pending message and, when position is not 0, moves it.
func (q *Queue) Update(ctx context.Context, ref string, id int64, edit domain.Edit, position int) (domain.Message, error) {
	s, err := q.session(ctx, ref, principal.Principal.MayActOn)
	if err != nil {
		return domain.Message{}, err
	}
	return q.messages.Update(ctx, s.ID, id, edit, position)
}

// Delete removes a pending message.
func (q *Queue) Delete(ctx context.Context, ref string, id int64) error {
	s, err := q.session(ctx, ref, principal.Principal.MayActOn)
	if err != nil {
		return err
	}
	return q.messages.Delete(ctx, s.ID, id)
}

// session resolves ref and refuses a session credential the session
// unless may allows it: principal.MayRead for a read, MayActOn for a
// write.
func (q *Queue) session(ctx context.Context, ref string, may func(principal.Principal, int64) bool) (Session, error) {
	s, err := q.sessions.Get(ctx, ref)
	if err != nil {
		return Session{}, err
	}
	p, ok := principal.FromContext(ctx)
	if !ok || p.Kind != principal.Session || may(p, s.ID) {
		return s, nil
	}
	return Session{}, fmt.Errorf("%w: session #%d's credential may act only on its own session's queue, not on session %d's; that needs an operator key",
		ErrForbidden, p.SessionID, s.ID)
}
