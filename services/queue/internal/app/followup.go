package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// FollowUp is a request for a session's next prompt.
type FollowUp struct {
	SessionRef      string
	Prompt          string
	Goal            string
	ForceImmediate  bool
	ActingSessionID int64
	IdempotencyKey  string
	// Origin is who wrote it: OriginCaller when empty; an automated_*
	// origin for a notice Zimmer writes (QueueNotice), never a caller's
	// choice.
	Origin domain.Origin
	// QueueOnFailed queues it on a failed session, where a caller's
	// follow-up is refused: a notice Zimmer writes about the session's pull
	// request waits there, pending, for a restart's turn or an archive's
	// retirement, as the spec's poller queues its row (QU-21).
	QueueOnFailed bool
}

// FollowUpResult is what became of a follow-up.
type FollowUpResult struct {
	// Delivered: it is the session's turn now; otherwise it was queued.
	Delivered bool
	JobID     string
	Queued    domain.Message
	Message   string
	Uncle     UncleEdge
}

// SendFollowUp sends the session its next prompt: delivered as a turn now to a
// session at rest; queued behind a running one's turn, unless
// ForceImmediate, which interrupts that turn and delivers. The acting
// session's uncle edge is recorded before anything is sent and retracted
// if nothing is.
type SendFollowUp struct {
	Sessions Sessions
	Messages Messages
	Turns    Turns
	Runner   Interrupter
	Pauser   Pauser
	Uncles   Uncles
	Drains   Drains
	Alerts   alert.Raiser
	Timeline Timeline
	Logger   *slog.Logger
}

// Handle sends the follow-up in.
func (uc SendFollowUp) Handle(ctx context.Context, in FollowUp) (FollowUpResult, error) {
	s, err := openSession(ctx, uc.Sessions, in.SessionRef)
	// Nothing delivers to a failed session: a notice for it is queued.
	queueOnly := in.QueueOnFailed && errors.Is(err, ErrClosed) && s.Status == rules.StatusFailed
	if err != nil && !queueOnly {
		return FollowUpResult{}, err
	}
	actingID, err := acting(ctx, in.ActingSessionID)
	if err != nil {
		return FollowUpResult{}, err
	}
	origin := in.Origin
	if origin == "" {
		origin = domain.OriginCaller
	}
	n := domain.NewMessage{SessionID: s.ID, Origin: origin, ActingSessionID: actingID,
		Content: in.Prompt, Goal: in.Goal, IdempotencyKey: in.IdempotencyKey}
	if err := n.Validate(); err != nil {
		return FollowUpResult{}, renamed(err)
	}
	key := in.IdempotencyKey
	if key == "" {
		key = uuid.NewString()
	}
	n.IdempotencyKey = domain.FollowUpIdempotencyKey(key)
	var res FollowUpResult
	// withUncle fills res.Uncle once send has returned.
	err = uncleGuard{uc.Uncles, uc.Alerts, uc.Logger}.around(ctx, n.ActingSessionID, s.ID, "follow_up", &res.Uncle, func() (bool, error) {
		// A retry (the caller's key again) is answered as the first call
		// was, whatever the session did in between: the first call either
		// queued the follow-up under the key...
		if in.IdempotencyKey != "" {
			m, found, err := uc.Messages.Keyed(ctx, s.ID, n.IdempotencyKey)
			if err != nil {
				return false, err
			}
			if found {
				res, err = uc.followUpQueued(ctx, s, m, in.ForceImmediate)
				return err == nil, err
			}
		}
		// ...or delivered it as a turn, which lifecycle answers
		// already_delivered under its delivery id even while that turn runs:
		// so a keyed follow-up asks lifecycle first even of a running
		// session. Otherwise only a session at rest is asked.
		if !queueOnly && (s.Status != rules.StatusRunning || in.IdempotencyKey != "") {
			d, err := uc.Turns.Deliver(ctx, Delivery{SessionID: s.ID, ID: domain.FollowUpDeliveryID(s.ID, key),
				Prompt: n.Content, Goal: n.Goal, Mode: ModeIdle, What: "a follow-up"})
			if err != nil {
				return false, err
			}
			switch d.Refusal {
			case RefusalNone:
				res = FollowUpResult{Delivered: true, JobID: d.JobID,
					Message: domain.FollowUpDelivered(s.ID)}
				return true, nil
			case RefusalBusy:
				// Running (it may have started meanwhile): queue behind its
				// turn, or interrupt it when forced.
			default:
				return false, fmt.Errorf("%w: %s", ErrRefused, d.Message)
			}
		}
		m, created, err := uc.Messages.Enqueue(ctx, n)
		if err != nil {
			return false, err
		}
		if created {
			noteEnqueued(ctx, uc.Timeline, uc.Logger, m)
		}
		// A failed session's queue is drained by its restart's turn.
		if !in.ForceImmediate && !queueOnly {
			poke(ctx, uc.Drains, uc.Logger, s.ID)
		}
		res, err = uc.followUpQueued(ctx, s, m, in.ForceImmediate)
		return err == nil, err
	})
	return res, err
}

// interrupter is the interrupt a forced follow-up makes.
func (uc SendFollowUp) interrupter() interrupter {
	return interrupter{sessions: uc.Sessions, messages: uc.Messages, turns: uc.Turns, runner: uc.Runner, pauser: uc.Pauser, logger: uc.Logger}
}

// followUpQueued answers a follow-up queued as m: waiting in the queue,
// or, when forced, the turn it became by interrupting the running one (at
// once if it is still pending; a retry finds it sent).
func (uc SendFollowUp) followUpQueued(ctx context.Context, asked Session, m domain.Message, force bool) (FollowUpResult, error) {
	if !force || m.Status == domain.StatusUndelivered {
		return FollowUpResult{Queued: m, Message: domain.FollowUpQueuedMessage}, nil
	}
	if m.Status != domain.StatusSent {
		now, _, err := uc.interrupter().interrupt(ctx, asked, m.ID)
		if err != nil {
			return uc.interruptFailed(ctx, m, err)
		}
		if now.Status != domain.StatusSent {
			return FollowUpResult{Queued: now, Message: domain.NextInLineMessage(now)}, nil
		}
		m = now
	}
	return interruptedFor(m), nil
}

// interruptedFor answers a forced follow-up that became the turn m.
func interruptedFor(m domain.Message) FollowUpResult {
	return FollowUpResult{Delivered: true, JobID: m.DeliveredJobID,
		Message: domain.FollowUpInterrupted(m.SessionID)}
}

// interruptFailed answers a forced follow-up whose interrupt failed, from
// what became of its message. Sent: the same follow-up racing this call
// (a retry with its key) delivered it, and this call says so. Still live:
// it is queued all the same, and is sent when the turn ends, or by the
// drain after the pause that follows a halted turn whose delivery failed;
// so the caller is told it was queued, not that it failed (which would
// invite a second copy), and its uncle edge stays, as the turn it becomes
// must see it. Otherwise the interrupt's error stands.
func (uc SendFollowUp) interruptFailed(ctx context.Context, m domain.Message, cause error) (FollowUpResult, error) {
	now, err := uc.Messages.Message(ctx, m.SessionID, m.ID)
	switch {
	case err != nil:
		return FollowUpResult{}, cause
	case now.Status == domain.StatusSent:
		return interruptedFor(now), nil
	case !now.Live():
		return FollowUpResult{}, cause
	}
	uc.Logger.WarnContext(ctx, "a forced follow-up could not interrupt the running turn; it stays queued",
		"session_id", m.SessionID, "message_id", m.ID, "error", cause)
	poke(ctx, uc.Drains, uc.Logger, m.SessionID)
	return FollowUpResult{Queued: now, Message: domain.FollowUpQueuedUninterrupted(m.SessionID, m.ID)}, nil
}

// renamed names a message's content as a follow-up's prompt: the same
// rule, in the words of the request the caller sent.
func renamed(err error) error {
	var v *validation.Error
	if !errors.As(err, &v) {
		return err
	}
	out := &validation.Error{Violations: make([]validation.FieldViolation, len(v.Violations))}
	for i, fv := range v.Violations {
		if fv.Field == "content" {
			fv.Field = "prompt"
		}
		out.Violations[i] = fv
	}
	return out
}
