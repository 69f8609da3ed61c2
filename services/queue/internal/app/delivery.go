package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// Mode says what the session may be doing when a prompt becomes its turn
// (lifecycle's DeliveryMode).
type Mode int

// Delivery modes.
const (
	// ModeIdle: the session is at rest; it resumes with the prompt.
	ModeIdle Mode = iota + 1
	// ModeHandover: the running turn FromJobID just ended; the runner runs
	// the prompt itself, without a pause.
	ModeHandover
	// ModeAfterInterrupt: the running turn was just halted on purpose.
	ModeAfterInterrupt
)

// Refusal is why a session cannot take a delivery now (lifecycle's
// DeliveryRefusal); RefusalNone is a delivery.
type Refusal string

// Refusals.
const (
	RefusalNone       Refusal = ""
	RefusalBusy       Refusal = "busy"
	RefusalClosed     Refusal = "closed"
	RefusalBlocked    Refusal = "blocked_on_elicitation"
	RefusalAuthOutage Refusal = "auth_outage"
	RefusalMCPRetry   Refusal = "mcp_retry"
	RefusalAsleep     Refusal = "asleep"
)

// Delivery asks lifecycle to make a prompt the session's next turn.
type Delivery struct {
	SessionID int64
	// ID names the delivery; lifecycle applies one id once.
	ID        string
	Prompt    string
	Goal      string
	Mode      Mode
	FromJobID string
	// Automatic: a drain's delivery, to which the refusal states of an
	// auth outage park and an mcp_retry pause apply.
	Automatic bool
	// What the timeline line names: "queued message #12", "a follow-up".
	What string
}

// Delivered is lifecycle's answer.
type Delivered struct {
	JobID   string
	Refusal Refusal
	Message string
	// Already: the delivery id was applied before; nothing changed.
	Already bool
}

// Turns is lifecycle's DeliverTurn.
type Turns interface {
	Deliver(ctx context.Context, d Delivery) (Delivered, error)
}

// Interrupter is the runner's InterruptTurn: it halts the session's turn
// turnID (by the termination ladder) if its process runs, and answers once
// that process is gone. Any other turn, and one still starting, is left to
// run whole (interrupted false).
type Interrupter interface {
	InterruptTurn(ctx context.Context, sessionID int64, turnID, reason string) (interrupted bool, err error)
}

// UncleEdge is what recording "acting queued or interrupted target" did
// in lineage.
type UncleEdge struct {
	Acting, Target int64
	EntryPoint     string
	// Outcome is lineage's UncleEdgeOutcome, handed back on a retraction.
	Outcome int32
	Message string
	// Changed: an edge was written or inverted, so a failed delivery must
	// retract it.
	Changed bool
	// Refused: lineage's rules refuse the edge (Message says why); nothing
	// is sent.
	Refused bool
}

// Uncles records uncle edges in lineage, and retracts one whose delivery
// failed.
type Uncles interface {
	Record(ctx context.Context, acting, target int64, entryPoint string) (UncleEdge, error)
	Retract(ctx context.Context, e UncleEdge) error
}

// Drains pokes the session's after-pause drain (the queue's Temporal
// workflow), which delivers a pending message to a session at rest.
type Drains interface {
	Poke(ctx context.Context, sessionID int64) error
}

// ErrNoDrain: this queue runs no after-pause drain (no Temporal), so a
// pause that needs one must wait for a queue that does.
var ErrNoDrain = errors.New("this queue runs no drain (no Temporal)")

// DrainAfterPause is lifecycle's drain_enqueued_messages_after_pause: it
// pokes the session's drain only where there is something to drain
// (domain.DrainAfterPause).
type DrainAfterPause struct {
	Messages Messages
	Drains   Drains
}

// Handle decides for the pause that left session sessionID statusAfter;
// poked says whether the drain was started or poked.
func (uc DrainAfterPause) Handle(ctx context.Context, sessionID int64, statusAfter string) (poked bool, err error) {
	page, err := uc.Messages.ListPage(ctx, sessionID, domain.ListFilter{Statuses: []domain.Status{domain.StatusPending}, Page: 1, PerPage: 1})
	if err != nil {
		return false, err
	}
	if !domain.DrainAfterPause(statusAfter, page.TotalCount) {
		return false, nil
	}
	if uc.Drains == nil {
		return false, ErrNoDrain
	}
	return true, uc.Drains.Poke(ctx, sessionID)
}

// Pauser pauses a running session (lifecycle's pause, as the queue): the
// way out when an interrupt halted a turn and the delivery behind it
// failed, so the session does not stay running with no turn; the pause's
// drain delivers the message later.
type Pauser interface {
	Pause(ctx context.Context, sessionID int64, pausedBy string) error
}

// ErrRefused: the session cannot take the delivery now (blocked on an
// elicitation, say); the error says why.
var ErrRefused = errors.New("the session cannot take the message now")

// ErrNoRunner: this queue has no runner to interrupt turns with
// (QUEUE_RUNNER_ADDR unset).
var ErrNoRunner = errors.New("this queue service has no runner to interrupt the turn (QUEUE_RUNNER_ADDR is not set); retry once it is configured")

// ErrUncleRefused: lineage refuses the uncle edge the call would record;
// nothing was sent.
var ErrUncleRefused = errors.New("lineage refuses the uncle edge")

// Handover is what a turn-end drain hands the runner: the message and the
// turn it becomes.
type Handover struct {
	Message domain.Message
	JobID   string
}

// DeliverNext hands the session's next pending message over as the turn
// after fromJobID, while the session is still running (the runner's
// turn-end drain, before its pause). A retry after a lost answer gets the
// same message back. ok is false when there is nothing to hand over or the
// session cannot take it: the runner pauses.
type DeliverNext struct {
	Messages Messages
	Turns    Turns
	Logger   *slog.Logger
}

// Handle hands over the message that follows the turn fromJobID.
func (uc DeliverNext) Handle(ctx context.Context, sessionID int64, fromJobID string) (Handover, bool, error) {
	if sessionID <= 0 || fromJobID == "" {
		return Handover{}, false, errors.Join(
			invalidIf(sessionID <= 0, "session_id", "must be a positive session id"),
			invalidIf(fromJobID == "", "from_job_id", "is required: the turn that ended"))
	}
	if m, ok, err := uc.Messages.HandedOver(ctx, sessionID, fromJobID); err != nil || ok {
		return Handover{Message: m, JobID: m.DeliveredJobID}, ok, err
	}
	// Under the interrupt lease: a queue interrupt of the same session either
	// comes first (it halts the ended turn, delivers its message, and this
	// hand-over from a job no longer running is refused) or after (it
	// interrupts the handed-over turn like any other). Never both halfway,
	// which would mark a message sent that no turn runs.
	var (
		m  domain.Message
		ok bool
	)
	err := uc.Messages.LockForInterrupt(ctx, sessionID, func(ctx context.Context) error {
		// Again under the lease: a retry that arrived while the first call
		// was still delivering must get that hand-over, not a refusal (the
		// turn it would hand over from is no longer running), which would
		// pause the session with the handed-over turn never run.
		var err error
		if m, ok, err = uc.Messages.HandedOver(ctx, sessionID, fromJobID); err != nil || ok {
			return err
		}
		send, _ := sender(uc.Turns, ModeHandover, fromJobID, true)
		for {
			m, ok, err = uc.Messages.Deliver(ctx, sessionID, domain.Pick{HandedOverFrom: fromJobID}, send)
			// A message that can never be a turn is now undelivered; on to
			// the next.
			if undeliverable(ctx, uc.Logger, sessionID, err) {
				continue
			}
			// A message whose turn is the one that just ended (made by an
			// earlier delivery whose answer was lost) is now recorded sent;
			// handing it over would run its prompt again. On to the next.
			if err != nil || !ok || m.DeliveredJobID != fromJobID {
				return err
			}
		}
	})
	if err != nil || !ok {
		return Handover{}, false, err
	}
	return Handover{Message: m, JobID: m.DeliveredJobID}, true, nil
}

// DeliverPending delivers the session's first pending message to the
// session at rest (the after-pause drain). delivered is false when the
// queue is empty or the session cannot take it now; an error is a failed
// attempt, and the message stays pending.
//
// A message that can never be a turn (domain.Undeliverable) is marked
// undelivered on the way, with its reason, and the next one is tried: the
// queue never holds a message nothing will deliver.
type DeliverPending struct {
	Messages Messages
	Turns    Turns
	Logger   *slog.Logger
}

// Handle delivers the first pending message of the session.
func (uc DeliverPending) Handle(ctx context.Context, sessionID int64) (bool, error) {
	send, _ := sender(uc.Turns, ModeIdle, "", true)
	for {
		_, ok, err := uc.Messages.Deliver(ctx, sessionID, domain.Pick{}, send)
		if !undeliverable(ctx, uc.Logger, sessionID, err) {
			return ok, err
		}
	}
}

// undeliverable says whether err is a message's delivery that ended it
// undelivered because it can never be a turn, and logs it: the caller goes
// on to the next message.
func undeliverable(ctx context.Context, logger *slog.Logger, sessionID int64, err error) bool {
	var never *domain.UndeliverableError
	if !errors.As(err, &never) {
		return false
	}
	logger.WarnContext(ctx, "a queued message can never be delivered: marked undelivered", "session_id", sessionID,
		"message_id", never.MessageID, "reason", never.Reason)
	return true
}

// AbandonQueue ends the live messages of a session lifecycle no longer knows
// (it was deleted) undelivered, saying so: nothing will ever deliver them.
// It returns how many there were.
type AbandonQueue struct {
	Messages Messages
	Logger   *slog.Logger
}

// Handle abandons the session's queue.
func (uc AbandonQueue) Handle(ctx context.Context, sessionID int64) (int, error) {
	gone, err := uc.Messages.Abandon(ctx, sessionID, domain.ReasonSessionGone)
	if err != nil {
		return 0, err
	}
	if len(gone) > 0 {
		uc.Logger.WarnContext(ctx, "the session no longer exists: its queued messages are marked undelivered",
			"session_id", sessionID, "undelivered", len(gone))
	}
	return len(gone), nil
}

// sender is the Send a delivery in mode makes; refusal reports lifecycle's
// refusal, if it refused.
func sender(turns Turns, mode Mode, fromJobID string, automatic bool) (domain.Send, func() Delivered) {
	var last Delivered
	send := func(ctx context.Context, m domain.Message) (string, bool, error) {
		if err := domain.CheckDeliverable(m); err != nil {
			return "", false, err
		}
		d, err := turns.Deliver(ctx, Delivery{
			SessionID: m.SessionID, ID: domain.DeliveryID(m), Prompt: m.Content, Goal: m.Goal,
			Mode: mode, FromJobID: fromJobID, Automatic: automatic, What: fmt.Sprintf("queued message #%d", m.ID),
		})
		if err != nil {
			return "", false, err
		}
		last = d
		return d.JobID, d.Refusal == RefusalNone, nil
	}
	return send, func() Delivered { return last }
}
