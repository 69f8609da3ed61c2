// Package app is the queue's use cases over a session's enqueued messages:
// list, enqueue, edit or reorder, delete. Delivery comes later. A session
// lives in lifecycle, not here: every use case resolves the session named
// (id or slug) through the Sessions port first, which also says whether it
// exists and what state it is in; the Messages port is the queue's own
// store.
package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
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
	Update(ctx context.Context, sessionID, id int64, edit domain.Edit, position int) (domain.Message, error)
	Delete(ctx context.Context, sessionID, id int64) error
}

// Queue is the enqueued-messages use cases.
type Queue struct {
	sessions Sessions
	messages Messages
}

// New returns the use cases over sessions and messages.
func New(sessions Sessions, messages Messages) *Queue {
	return &Queue{sessions: sessions, messages: messages}
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
	s, err := q.session(ctx, ref, principal.ScopeSessionsRead)
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
	s, err := q.session(ctx, in.SessionRef, "")
	if err != nil {
		return domain.Message{}, false, err
	}
	switch s.Status {
	case rules.StatusArchived:
		return domain.Message{}, false, fmt.Errorf("%w: session %d is archived, so nothing would deliver the message; unarchive it first", ErrClosed, s.ID)
	case rules.StatusFailed:
		return domain.Message{}, false, fmt.Errorf("%w: session %d has failed; restart it (action restart) and queue the message again", ErrClosed, s.ID)
	}
	acting := in.ActingSessionID
	if p, ok := principal.FromContext(ctx); ok && p.Kind == principal.Session {
		acting = p.SessionID
	}
	return q.messages.Enqueue(ctx, domain.NewMessage{
		SessionID: s.ID, Origin: domain.OriginCaller, ActingSessionID: acting,
		Content: in.Content, Goal: in.Goal, IdempotencyKey: in.IdempotencyKey,
	})
}

// Update edits a pending message and, when position is not 0, moves it.
func (q *Queue) Update(ctx context.Context, ref string, id int64, edit domain.Edit, position int) (domain.Message, error) {
	s, err := q.session(ctx, ref, "")
	if err != nil {
		return domain.Message{}, err
	}
	return q.messages.Update(ctx, s.ID, id, edit, position)
}

// Delete removes a pending message.
func (q *Queue) Delete(ctx context.Context, ref string, id int64) error {
	s, err := q.session(ctx, ref, "")
	if err != nil {
		return err
	}
	return q.messages.Delete(ctx, s.ID, id)
}

// session resolves ref and refuses a session credential any session but
// its own, unless it holds readScope (when not "").
func (q *Queue) session(ctx context.Context, ref, readScope string) (Session, error) {
	s, err := q.sessions.Get(ctx, ref)
	if err != nil {
		return Session{}, err
	}
	p, ok := principal.FromContext(ctx)
	if !ok || p.Kind != principal.Session || p.MayActOn(s.ID) || (readScope != "" && p.Has(readScope)) {
		return s, nil
	}
	return Session{}, fmt.Errorf("%w: session #%d's credential may act only on its own session's queue, not on session %d's; that needs an operator key",
		ErrForbidden, p.SessionID, s.ID)
}
