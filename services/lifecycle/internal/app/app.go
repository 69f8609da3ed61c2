// Package app holds the lifecycle use cases. Each is a small type depending
// only on domain ports, so it runs the same against Postgres or a fake.
package app

import (
	"context"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
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
		announce func(created domain.Session) []domain.Event,
	) (domain.Session, error)
	// Get returns the session a reference names, or a *domain.NotFoundError.
	Get(ctx context.Context, ref domain.SessionRef) (domain.Session, error)
	// List returns one page of the sessions matching f, newest first.
	List(ctx context.Context, f domain.ListFilter) (domain.Page, error)
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
		func(created domain.Session) []domain.Event {
			return []domain.Event{domain.SessionCreated{Session: created}}
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

// Sessions bundles the use cases the transport adapters call.
type Sessions struct {
	Create CreateSession
	Get    GetSession
	List   ListSessions
}

// NewSessions wires the use cases over one repository and clock.
func NewSessions(repo SessionRepository, clock domain.Clock) Sessions {
	return Sessions{
		Create: CreateSession{Repo: repo, Clock: clock},
		Get:    GetSession{Repo: repo},
		List:   ListSessions{Repo: repo},
	}
}
