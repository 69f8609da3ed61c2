package app

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/google/uuid"

	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// Enqueue is a request to queue a message.
type Enqueue struct {
	SessionRef      string
	Content         string
	Goal            string
	ActingSessionID int64
	IdempotencyKey  string
}

// ListMessages is a page of the session's queue. A session credential
// reads its own session's queue, or any with the sessions.read scope.
type ListMessages struct {
	Sessions Sessions
	Messages Messages
}

// Handle lists a page of the queue of the session ref names.
func (uc ListMessages) Handle(ctx context.Context, ref string, req domain.ListRequest) (domain.Page, error) {
	f, err := req.Filter()
	if err != nil {
		return domain.Page{}, err
	}
	s, err := resolve(ctx, uc.Sessions, ref, principal.Principal.MayRead)
	if err != nil {
		return domain.Page{}, err
	}
	return uc.Messages.ListPage(ctx, s.ID, f)
}

// GetMessage is one message of the session's queue, whatever its status;
// another session's message is not found, as an unknown one is.
type GetMessage struct {
	Sessions Sessions
	Messages Messages
}

// Handle reads message id of the session ref names.
func (uc GetMessage) Handle(ctx context.Context, ref string, id int64) (domain.Message, error) {
	var vs validation.Violations
	domain.CheckPick(&vs, id, 0)
	if err := vs.Err(); err != nil {
		return domain.Message{}, err
	}
	s, err := resolve(ctx, uc.Sessions, ref, principal.Principal.MayRead)
	if err != nil {
		return domain.Message{}, err
	}
	return uc.Messages.Message(ctx, s.ID, id)
}

// EnqueueMessage appends a caller's message to the session's queue. An
// archived or failed session refuses it: nothing would deliver it. A
// session credential queues onto its own session only, and as that
// session whatever the request declares. The origin is always "caller":
// Zimmer's own notices are queued by the pollers, never through a request.
// The acting session's uncle edge is recorded first (Uncles, optional), and
// the session's drain is poked after (Drains, optional).
type EnqueueMessage struct {
	Sessions Sessions
	Messages Messages
	Uncles   Uncles
	Drains   Drains
	Alerts   alert.Raiser
	Timeline Timeline
	Logger   *slog.Logger
}

// Handle queues in.
func (uc EnqueueMessage) Handle(ctx context.Context, in Enqueue) (domain.Message, bool, error) {
	s, err := openSession(ctx, uc.Sessions, in.SessionRef)
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
	err = uncleGuard{uc.Uncles, uc.Alerts, uc.Logger}.around(ctx, n.ActingSessionID, s.ID, "enqueue", &uncle, func() (bool, error) {
		m, created, err = uc.Messages.Enqueue(ctx, n)
		return err == nil, err
	})
	if err != nil {
		return domain.Message{}, false, err
	}
	if created {
		noteEnqueued(ctx, uc.Timeline, uc.Logger, m)
	}
	// A session at rest takes it within seconds (the drain); a running one
	// at its turn end, and the drain finds nothing to do.
	poke(ctx, uc.Drains, uc.Logger, s.ID)
	return m, created, nil
}

// noteEnqueued says on the session's timeline that m was queued (every
// enqueue does, follow-ups queued behind a turn included). The line's id
// derives from the message's, so a retry writes it once. A failure is
// logged, not returned: the message is queued, and the queue lists it.
func noteEnqueued(ctx context.Context, timeline Timeline, logger *slog.Logger, m domain.Message) {
	if timeline == nil {
		return
	}
	noteID := uuid.NewSHA1(enqueueLines, []byte(strconv.FormatInt(m.ID, 10))).String()
	if err := timeline.Note(ctx, m.SessionID, noteID, domain.EnqueuedLine(m)); err != nil {
		logger.WarnContext(ctx, "write the enqueue's timeline line; the message is queued without it",
			"session_id", m.SessionID, "message_id", m.ID, "error", err)
	}
}

// enqueueLines is the namespace of the enqueue lines' ids (UUID v5 of the
// message id).
var enqueueLines = uuid.MustParse("5d0f4a52-8a8e-4c1e-9f0b-6c2d6c1b7e23")

// UpdateMessage edits a pending message and, when position is not 0,
// moves it.
type UpdateMessage struct {
	Sessions Sessions
	Messages Messages
}

// Handle edits message id of the session ref names.
func (uc UpdateMessage) Handle(ctx context.Context, ref string, id int64, edit domain.Edit, position int) (domain.Message, error) {
	if err := domain.CheckUpdate(edit, position); err != nil {
		return domain.Message{}, err
	}
	s, err := resolve(ctx, uc.Sessions, ref, principal.Principal.MayActOn)
	if err != nil {
		return domain.Message{}, err
	}
	return uc.Messages.Update(ctx, s.ID, id, edit, position)
}

// DeleteMessage removes a pending message.
type DeleteMessage struct {
	Sessions Sessions
	Messages Messages
}

// Handle deletes message id of the session ref names.
func (uc DeleteMessage) Handle(ctx context.Context, ref string, id int64) error {
	s, err := resolve(ctx, uc.Sessions, ref, principal.Principal.MayActOn)
	if err != nil {
		return err
	}
	return uc.Messages.Delete(ctx, s.ID, id)
}

// poke starts or pokes the session's after-pause drain (none without
// Temporal), after a message was queued.
func poke(ctx context.Context, drains Drains, logger *slog.Logger, sessionID int64) {
	if drains == nil {
		return
	}
	if err := drains.Poke(ctx, sessionID); err != nil {
		// The message is stored and pending: the session's next turn end or
		// pause drains it. Say so loudly: an idle session waits until then.
		logger.ErrorContext(ctx, "poke the session's drain after an enqueue; the message waits for the session's next turn end or pause",
			"session_id", sessionID, "error", err)
	}
}
