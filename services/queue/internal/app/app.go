// Package app is the queue's use cases over a session's enqueued messages,
// one type each (as in every context): list, enqueue, edit or reorder and
// delete them (messages.go); deliver them as turns — the runner's turn-end
// hand-over, the after-pause drain, and the abandonment of a deleted
// session's queue (delivery.go), follow-ups (followup.go), send now and
// interrupt (interrupt.go); and the archive's seal, retirement and
// reopening (archive.go). A session lives in lifecycle, not here: every use
// case a caller names a session to resolves it (id or slug) through the
// Sessions port first, which also says whether it exists and what state it
// is in; the Messages port is the queue's own store.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/validation"
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
	ListPage(ctx context.Context, sessionID int64, f domain.ListFilter) (domain.Page, error)
	Message(ctx context.Context, sessionID, id int64) (domain.Message, error)
	Keyed(ctx context.Context, sessionID int64, idempotencyKey string) (domain.Message, bool, error)
	Update(ctx context.Context, sessionID, id int64, edit domain.Edit, position int) (domain.Message, error)
	Delete(ctx context.Context, sessionID, id int64) error
	// Deliver claims a pending message under a lease, sends it with
	// nothing held open, and settles the claim (see store).
	Deliver(ctx context.Context, sessionID int64, pick domain.Pick, send domain.Send) (domain.Message, bool, error)
	HandedOver(ctx context.Context, sessionID int64, fromJobID string) (domain.Message, bool, error)
	// LockForInterrupt runs fn under the session's interrupt lease: one
	// interrupt or turn-end hand-over of a session at a time.
	LockForInterrupt(ctx context.Context, sessionID int64, fn func(ctx context.Context) error) error
	// Abandon ends a deleted session's live messages undelivered.
	Abandon(ctx context.Context, sessionID int64, reason string) ([]domain.Message, error)
	Seal(ctx context.Context, sessionID int64, by string) ([]domain.Message, error)
	Unseal(ctx context.Context, sessionID int64, by string) error
	Retire(ctx context.Context, sessionID int64, archivedAt time.Time, attempt string) ([]domain.Message, error)
	Reopen(ctx context.Context, sessionID int64, unarchivedAt time.Time) error
	// CountPending counts the pending messages of each session that has
	// any.
	CountPending(ctx context.Context, sessionIDs []int64) (map[int64]int32, error)
}

// Timeline writes lines on a session's timeline (lifecycle's). noteID
// is the line's idempotency key: the same id writes once.
type Timeline interface {
	Note(ctx context.Context, sessionID int64, noteID, message string) error
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
	// Timeline is optional (component tests): no enqueue lines without it.
	Timeline Timeline
	Logger   *slog.Logger
}

// Queue is the queue's use cases, wired over one set of ports.
type Queue struct {
	List    ListMessages
	Get     GetMessage
	Enqueue EnqueueMessage
	Update  UpdateMessage
	Delete  DeleteMessage
	// FollowUp, SendNow and Interrupt deliver a caller's prompt or queued
	// message now (or queue it).
	FollowUp  SendFollowUp
	SendNow   SendNow
	Interrupt Interrupt
	// DeliverNext is the runner's turn-end hand-over; DeliverPending and
	// Abandon are the after-pause drain's.
	DeliverNext    DeliverNext
	DeliverPending DeliverPending
	Abandon        AbandonQueue
	// AfterPause is lifecycle's pause effect: the drain, where needed.
	AfterPause DrainAfterPause
	// Seal, Unseal, Retire and Reopen are the archive protocol's.
	Seal   SealQueue
	Unseal UnsealQueue
	Retire RetireQueue
	Reopen ReopenQueue
	// CountPending is the console's dashboard cards'.
	CountPending CountPending
}

// New wires the use cases over d. The drain delivers through
// DeliverPending and Abandon, which poke no drain, and the others poke it:
// so the composition root builds the use cases once without Drains for
// the drain, and again with it.
func New(d Deps) Queue {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Alerts == nil {
		d.Alerts = alert.Log{Logger: d.Logger}
	}
	return Queue{
		List: ListMessages{Sessions: d.Sessions, Messages: d.Messages},
		Get:  GetMessage{Sessions: d.Sessions, Messages: d.Messages},
		Enqueue: EnqueueMessage{Sessions: d.Sessions, Messages: d.Messages, Uncles: d.Uncles, Drains: d.Drains, Alerts: d.Alerts,
			Timeline: d.Timeline, Logger: d.Logger},
		Update: UpdateMessage{Sessions: d.Sessions, Messages: d.Messages},
		Delete: DeleteMessage{Sessions: d.Sessions, Messages: d.Messages},
		// A follow-up may do everything the others do: it takes every port.
		FollowUp: SendFollowUp(d),
		SendNow:  SendNow{Sessions: d.Sessions, Messages: d.Messages, Turns: d.Turns, Uncles: d.Uncles, Alerts: d.Alerts, Logger: d.Logger},
		Interrupt: Interrupt{Sessions: d.Sessions, Messages: d.Messages, Turns: d.Turns, Runner: d.Runner, Pauser: d.Pauser,
			Uncles: d.Uncles, Alerts: d.Alerts, Logger: d.Logger},
		DeliverNext:    DeliverNext{Messages: d.Messages, Turns: d.Turns, Logger: d.Logger},
		DeliverPending: DeliverPending{Messages: d.Messages, Turns: d.Turns, Logger: d.Logger},
		Abandon:        AbandonQueue{Messages: d.Messages, Logger: d.Logger},
		AfterPause:     DrainAfterPause{Messages: d.Messages, Drains: d.Drains},
		Seal:           SealQueue{Messages: d.Messages},
		Unseal:         UnsealQueue{Messages: d.Messages},
		Retire:         RetireQueue{Messages: d.Messages, Alerts: d.Alerts, Logger: d.Logger},
		Reopen:         ReopenQueue{Messages: d.Messages},
		CountPending:   CountPending{Messages: d.Messages},
	}
}

// resolve resolves ref and refuses a session credential the session
// unless may allows it: principal.MayRead for a read, MayActOn for a
// write.
func resolve(ctx context.Context, sessions Sessions, ref string, may func(principal.Principal, int64) bool) (Session, error) {
	s, err := sessions.Get(ctx, ref)
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

// openSession resolves ref for a call that sends the session a message:
// it must be the caller's to act on and still take messages.
func openSession(ctx context.Context, sessions Sessions, ref string) (Session, error) {
	s, err := resolve(ctx, sessions, ref, principal.Principal.MayActOn)
	if err != nil {
		return Session{}, err
	}
	return s, closed(s)
}

// acting is the session a call acts as (principal.ActingAs): a session
// credential's own session, and another declared is refused; else what it
// declares.
func acting(ctx context.Context, declared int64) (int64, error) {
	p, ok := principal.FromContext(ctx)
	if !ok {
		return declared, nil
	}
	id, err := p.ActingAs(declared)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrForbidden, err)
	}
	return id, nil
}

// closed refuses a session nothing delivers to.
func closed(s Session) error {
	switch s.Status {
	case rules.StatusArchived:
		return fmt.Errorf("%w: session %d is archived, so nothing would deliver the message; unarchive it first", ErrClosed, s.ID)
	case rules.StatusFailed:
		return fmt.Errorf("%w: session %d has failed; restart it (action restart, or POST /api/v1/sessions/%d/restart) and send the message again",
			ErrClosed, s.ID, s.ID)
	}
	return nil
}

func invalidIf(cond bool, field, msg string) error {
	if !cond {
		return nil
	}
	return validation.Invalid(field, "%s", msg)
}
