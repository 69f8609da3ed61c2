package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/principal"
	"github.com/zimmerhq/zimmer/services/platform/surface"
	"github.com/zimmerhq/zimmer/services/platform/validation"
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
func (q *Queue) DeliverNext(ctx context.Context, sessionID int64, fromJobID string) (Handover, bool, error) {
	if sessionID <= 0 || fromJobID == "" {
		return Handover{}, false, errors.Join(
			invalidIf(sessionID <= 0, "session_id", "must be a positive session id"),
			invalidIf(fromJobID == "", "from_job_id", "is required: the turn that ended"))
	}
	if m, ok, err := q.messages.HandedOver(ctx, sessionID, fromJobID); err != nil || ok {
		return Handover{Message: m, JobID: m.DeliveredJobID}, ok, err
	}
	// Under the interrupt lock: a queue interrupt of the same session either
	// comes first (it halts the ended turn, delivers its message, and this
	// hand-over from a job no longer running is refused) or after (it
	// interrupts the handed-over turn like any other). Never both halfway,
	// which would mark a message sent that no turn runs.
	var (
		m  domain.Message
		ok bool
	)
	err := q.messages.LockForInterrupt(ctx, sessionID, func(ctx context.Context) error {
		// Again under the lock: a retry that arrived while the first call
		// was still delivering must get that hand-over, not a refusal (the
		// turn it would hand over from is no longer running), which would
		// pause the session with the handed-over turn never run.
		var err error
		if m, ok, err = q.messages.HandedOver(ctx, sessionID, fromJobID); err != nil || ok {
			return err
		}
		send, _ := q.sender(ModeHandover, fromJobID, true)
		for {
			m, ok, err = q.messages.Deliver(ctx, sessionID, domain.Pick{HandedOverFrom: fromJobID}, send)
			// A message that can never be a turn is now undelivered; on to
			// the next.
			if q.undeliverable(ctx, sessionID, err) {
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
func (q *Queue) DeliverPending(ctx context.Context, sessionID int64) (bool, error) {
	send, _ := q.sender(ModeIdle, "", true)
	for {
		_, ok, err := q.messages.Deliver(ctx, sessionID, domain.Pick{}, send)
		if !q.undeliverable(ctx, sessionID, err) {
			return ok, err
		}
	}
}

// undeliverable says whether err is a message's delivery that ended it
// undelivered because it can never be a turn, and logs it: the caller goes
// on to the next message.
func (q *Queue) undeliverable(ctx context.Context, sessionID int64, err error) bool {
	var never *domain.UndeliverableError
	if !errors.As(err, &never) {
		return false
	}
	q.logger.WarnContext(ctx, "a queued message can never be delivered: marked undelivered", "session_id", sessionID,
		"message_id", never.MessageID, "reason", never.Reason)
	return true
}

// Abandon ends the live messages of a session lifecycle no longer knows
// (it was deleted) undelivered, saying so: nothing will ever deliver them.
// It returns how many there were.
func (q *Queue) Abandon(ctx context.Context, sessionID int64) (int, error) {
	gone, err := q.messages.Abandon(ctx, sessionID, domain.ReasonSessionGone)
	if err != nil {
		return 0, err
	}
	if len(gone) > 0 {
		q.logger.WarnContext(ctx, "the session no longer exists: its queued messages are marked undelivered",
			"session_id", sessionID, "undelivered", len(gone))
	}
	return len(gone), nil
}

// sender is the Send a delivery in mode makes; refusal reports lifecycle's
// refusal, if it refused.
func (q *Queue) sender(mode Mode, fromJobID string, automatic bool) (domain.Send, func() Delivered) {
	var last Delivered
	send := func(ctx context.Context, m domain.Message) (string, bool, error) {
		if err := domain.CheckDeliverable(m); err != nil {
			return "", false, err
		}
		d, err := q.turns.Deliver(ctx, Delivery{
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

// FollowUp is a request for a session's next prompt.
type FollowUp struct {
	SessionRef      string
	Prompt          string
	Goal            string
	ForceImmediate  bool
	ActingSessionID int64
	IdempotencyKey  string
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

// FollowUp sends the session its next prompt: delivered as a turn now to a
// session at rest; queued behind a running one's turn, unless
// ForceImmediate, which interrupts that turn and delivers. The acting
// session's uncle edge is recorded before anything is sent and retracted
// if nothing is.
func (q *Queue) FollowUp(ctx context.Context, in FollowUp) (FollowUpResult, error) {
	s, err := q.openSession(ctx, in.SessionRef)
	if err != nil {
		return FollowUpResult{}, err
	}
	actingID, err := acting(ctx, in.ActingSessionID)
	if err != nil {
		return FollowUpResult{}, err
	}
	n := domain.NewMessage{SessionID: s.ID, Origin: domain.OriginCaller, ActingSessionID: actingID,
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
	err = q.withUncle(ctx, n.ActingSessionID, s.ID, "follow_up", &res.Uncle, func() (bool, error) {
		// A retry (the caller's key again) is answered as the first call
		// was, whatever the session did in between: the first call either
		// queued the follow-up under the key...
		if in.IdempotencyKey != "" {
			m, found, err := q.messages.Keyed(ctx, s.ID, n.IdempotencyKey)
			if err != nil {
				return false, err
			}
			if found {
				res, err = q.followUpQueued(ctx, s, m, in.ForceImmediate)
				return err == nil, err
			}
		}
		// ...or delivered it as a turn, which lifecycle answers
		// already_delivered under its delivery id even while that turn runs:
		// so a keyed follow-up asks lifecycle first even of a running
		// session. Otherwise only a session at rest is asked.
		if s.Status != rules.StatusRunning || in.IdempotencyKey != "" {
			d, err := q.turns.Deliver(ctx, Delivery{SessionID: s.ID, ID: domain.FollowUpDeliveryID(s.ID, key),
				Prompt: n.Content, Goal: n.Goal, Mode: ModeIdle, What: "a follow-up"})
			if err != nil {
				return false, err
			}
			switch d.Refusal {
			case RefusalNone:
				res = FollowUpResult{Delivered: true, JobID: d.JobID,
					Message: fmt.Sprintf("Follow-up delivered: it is session %d's turn now.", s.ID)}
				return true, nil
			case RefusalBusy:
				// Running (it may have started meanwhile): queue behind its
				// turn, or interrupt it when forced.
			default:
				return false, fmt.Errorf("%w: %s", ErrRefused, d.Message)
			}
		}
		m, _, err := q.messages.Enqueue(ctx, n)
		if err != nil {
			return false, err
		}
		if !in.ForceImmediate {
			q.poke(ctx, s.ID)
		}
		res, err = q.followUpQueued(ctx, s, m, in.ForceImmediate)
		return err == nil, err
	})
	return res, err
}

// followUpQueued answers a follow-up queued as m: waiting in the queue,
// or, when forced, the turn it became by interrupting the running one (at
// once if it is still pending; a retry finds it sent).
func (q *Queue) followUpQueued(ctx context.Context, asked Session, m domain.Message, force bool) (FollowUpResult, error) {
	if !force || m.Status == domain.StatusUndelivered {
		return FollowUpResult{Queued: m, Message: domain.FollowUpQueuedMessage}, nil
	}
	if m.Status != domain.StatusSent {
		now, _, err := q.interrupt(ctx, asked, m.ID)
		if err != nil {
			return q.interruptFailed(ctx, m, err)
		}
		if now.Status != domain.StatusSent {
			return FollowUpResult{Queued: now, Message: NextInLineMessage(now)}, nil
		}
		m = now
	}
	return interruptedFor(m), nil
}

// NextInLineMessage says that the interrupt with message m halted nothing:
// the turn it was asked to halt had already given way to another (an
// earlier interrupt's message, a hand-over), which runs whole, and m is
// first in line behind it.
func NextInLineMessage(m domain.Message) string {
	return fmt.Sprintf("Message %d is first in line: the turn it was to interrupt had already given way to another "+
		"(an earlier interrupt's message, or the next queued one), which runs to its end; session %d takes message %d as soon as it does.",
		m.ID, m.SessionID, m.ID)
}

// interruptedFor answers a forced follow-up that became the turn m.
func interruptedFor(m domain.Message) FollowUpResult {
	return FollowUpResult{Delivered: true, JobID: m.DeliveredJobID,
		Message: fmt.Sprintf("The running turn was interrupted; the follow-up is session %d's turn now.", m.SessionID)}
}

// interruptFailed answers a forced follow-up whose interrupt failed, from
// what became of its message. Sent: the same follow-up racing this call
// (a retry with its key) delivered it, and this call says so. Still live:
// it is queued all the same, and is sent when the turn ends, or by the
// drain after the pause that follows a halted turn whose delivery failed;
// so the caller is told it was queued, not that it failed (which would
// invite a second copy), and its uncle edge stays, as the turn it becomes
// must see it. Otherwise the interrupt's error stands.
func (q *Queue) interruptFailed(ctx context.Context, m domain.Message, cause error) (FollowUpResult, error) {
	now, err := q.messages.Message(ctx, m.SessionID, m.ID)
	switch {
	case err != nil:
		return FollowUpResult{}, cause
	case now.Status == domain.StatusSent:
		return interruptedFor(now), nil
	case !now.Live():
		return FollowUpResult{}, cause
	}
	q.logger.WarnContext(ctx, "a forced follow-up could not interrupt the running turn; it stays queued",
		"session_id", m.SessionID, "message_id", m.ID, "error", cause)
	q.poke(ctx, m.SessionID)
	return FollowUpResult{Queued: now, Message: fmt.Sprintf("Message queued: session %d's running turn could not be interrupted now, "+
		"so it will be sent when the agent completes its current task. To try again, interrupt with message %d.", m.SessionID, m.ID)}, nil
}

// SendNow delivers a pending message to the session at once when it is at
// rest; on a running session it moves the message to the front, to be the
// next turn (delivered false).
func (q *Queue) SendNow(ctx context.Context, ref string, id, actingID int64) (domain.Message, bool, error) {
	var vs validation.Violations
	if domain.CheckPick(&vs, id, actingID); vs.Err() != nil {
		return domain.Message{}, false, vs.Err()
	}
	s, err := q.openSession(ctx, ref)
	if err != nil {
		return domain.Message{}, false, err
	}
	if actingID, err = acting(ctx, actingID); err != nil {
		return domain.Message{}, false, err
	}
	var (
		m         domain.Message
		delivered bool
		uncle     UncleEdge
	)
	err = q.withUncle(ctx, actingID, s.ID, "send_now", &uncle, func() (bool, error) {
		if s.Status != rules.StatusRunning {
			send, last := q.sender(ModeIdle, "", false)
			m, delivered, err = q.messages.Deliver(ctx, s.ID, domain.Pick{MessageID: id}, send)
			if err != nil {
				return false, err
			}
			if delivered {
				return true, nil
			}
			if r := last().Refusal; r != RefusalBusy {
				return false, fmt.Errorf("%w: %s", ErrRefused, last().Message)
			}
		}
		m, err = q.messages.Update(ctx, s.ID, id, domain.Edit{}, 1)
		return err == nil, err
	})
	return m, delivered, err
}

// Interrupt stops the session's running turn through the runner's ladder
// and delivers the message as the next turn (at once, when the session is
// at rest). Interrupts of one session are served one at a time, in the
// order they arrive, so each message is delivered exactly once, in order.
func (q *Queue) Interrupt(ctx context.Context, ref string, id, actingID int64) (domain.Message, bool, error) {
	var vs validation.Violations
	if domain.CheckPick(&vs, id, actingID); vs.Err() != nil {
		return domain.Message{}, false, vs.Err()
	}
	s, err := q.openSession(ctx, ref)
	if err != nil {
		return domain.Message{}, false, err
	}
	if actingID, err = acting(ctx, actingID); err != nil {
		return domain.Message{}, false, err
	}
	var (
		m           domain.Message
		interrupted bool
		uncle       UncleEdge
	)
	err = q.withUncle(ctx, actingID, s.ID, "interrupt", &uncle, func() (bool, error) {
		m, interrupted, err = q.interrupt(ctx, s, id)
		return err == nil, err
	})
	return m, interrupted, err
}

// interrupt halts the turn that was running when the interrupt was asked
// (asked, the session as read then) and delivers message id in its place.
//
// The halt comes first, outside the session's interrupt lock: the turn-end
// hand-over takes that lock from inside the session's workflow, which must
// be free to answer the halt. The delivery then happens under the lock,
// and only in place of the halted turn (AFTER_INTERRUPT from that job):
// when interrupts are sent together, the first delivered replaces the
// turn, and the turn it makes runs whole. So does one a turn end handed
// over, and one the runner found still starting or already ended (it
// halts nothing then). Such a message goes to the front of the queue
// instead, to be handed over when the running turn ends (m pending,
// interrupted false).
func (q *Queue) interrupt(ctx context.Context, asked Session, id int64) (m domain.Message, interrupted bool, err error) {
	if q.runner == nil {
		return domain.Message{}, false, ErrNoRunner
	}
	sessionID := asked.ID
	// Check before halting anything: an interrupt for a message already
	// sent (a repeated interrupt, say) would halt the very turn that
	// message became and deliver nothing in its place.
	pending := func(ctx context.Context) error {
		msg, err := q.messages.Message(ctx, sessionID, id)
		if err != nil {
			return err
		}
		// Processing is a claim in flight (the drain's, say): it settles
		// sent, and the delivery below says so, or pending again.
		if !msg.Live() {
			return fmt.Errorf("%w: message %d is %s, so there is nothing to interrupt the turn for", domain.ErrNotPending, id, msg.Status)
		}
		if never := domain.CheckDeliverable(msg); never != nil {
			// Nothing to put in the turn's place: the turn runs on, and the
			// message leaves the queue saying why.
			_, _, err := q.messages.Deliver(ctx, sessionID, domain.Pick{MessageID: id},
				func(context.Context, domain.Message) (string, bool, error) { return "", false, never })
			return err
		}
		return nil
	}
	if err := pending(ctx); err != nil {
		return domain.Message{}, false, err
	}
	turn := runningTurn(asked)
	if turn == "" {
		// At rest when asked (or read without its turn): the turn running
		// now, if any, is the one to halt.
		now, err := q.sessions.Get(ctx, strconv.FormatInt(sessionID, 10))
		if err != nil {
			return domain.Message{}, false, err
		}
		turn = runningTurn(now)
	}
	if turn != "" {
		if interrupted, err = q.runner.InterruptTurn(ctx, sessionID, turn, "queue interrupt"); err != nil {
			return domain.Message{}, false, err
		}
	}
	err = q.messages.LockForInterrupt(ctx, sessionID, func(ctx context.Context) error {
		// Again under the lock: a concurrent interrupt with the same message
		// may have delivered it (both halted the one turn).
		if err := pending(ctx); err != nil {
			return err
		}
		var (
			mode    Mode
			already bool
			busy    bool
		)
		modes := []Mode{ModeIdle}
		if interrupted {
			// The session is running (its turn just halted) or, paused
			// meanwhile, at rest: lifecycle's refusal of one mode is the
			// other's cue.
			modes = []Mode{ModeAfterInterrupt, ModeIdle}
		}
		send := func(ctx context.Context, msg domain.Message) (string, bool, error) {
			for _, mode = range modes {
				d, err := q.turns.Deliver(ctx, Delivery{SessionID: sessionID, ID: domain.DeliveryID(msg), Prompt: msg.Content,
					Goal: msg.Goal, Mode: mode, FromJobID: fromJob(mode, turn), What: fmt.Sprintf("queued message #%d", msg.ID)})
				if err != nil {
					return "", false, err
				}
				switch d.Refusal {
				case RefusalNone:
					already = d.Already
					return d.JobID, true, nil
				case RefusalBusy:
					continue
				default:
					return "", false, fmt.Errorf("%w: %s", ErrRefused, d.Message)
				}
			}
			// Running a turn that is not the halted one: another delivery
			// took its place, or nothing was halted.
			busy = true
			return "", false, nil
		}
		var ok bool
		m, ok, err = q.messages.Deliver(ctx, sessionID, domain.Pick{MessageID: id}, send)
		if err == nil && busy {
			// Next: handed over as the running turn ends, which the queue's
			// lock orders after this.
			interrupted = false
			m, err = q.messages.Update(ctx, sessionID, id, domain.Edit{}, 1)
			return err
		}
		if err == nil && !ok {
			err = fmt.Errorf("%w: session %d's queue is sealed", domain.ErrSealed, sessionID)
		}
		if interrupted && (err != nil || already) {
			// The turn is halted and nothing replaced it — the delivery
			// failed (the message is still pending: the pause's drain
			// delivers it later), or lifecycle had applied it before (an
			// earlier call whose answer was lost), so the halted turn was
			// most likely the message's own: pause, so the session does not
			// stay running with no process.
			if perr := q.pauser.Pause(context.WithoutCancel(ctx), sessionID, "queue"); perr != nil {
				q.logger.ErrorContext(ctx, "an interrupted turn's delivery failed and so did the pause after it",
					"session_id", sessionID, "delivery_error", err, "pause_error", perr)
			}
		}
		return err
	})
	return m, interrupted, err
}

// fromJob is what a delivery in mode names as the turn it follows: after
// an interrupt, the halted turn, which it replaces only while that turn is
// the session's running one.
func fromJob(mode Mode, turn string) string {
	if mode == ModeAfterInterrupt {
		return turn
	}
	return ""
}

// runningTurn is the turn s runs (its running_job_id), "" when it runs
// none.
func runningTurn(s Session) string {
	if s.Status != rules.StatusRunning {
		return ""
	}
	return s.RunningJobID
}

// withUncle records acting's uncle edge over target (when acting is set)
// before send runs, so the turn it causes already sees the edge, and
// retracts it when send sends nothing (sent false or an error): a failed
// send leaves no edge. Lineage's refusal of the edge sends nothing.
func (q *Queue) withUncle(ctx context.Context, acting, target int64, action string, e *UncleEdge, send func() (bool, error)) error {
	if acting == 0 || q.uncles == nil {
		_, err := send()
		return err
	}
	entry := entryPoint(ctx, action)
	rec, err := q.uncles.Record(ctx, acting, target, entry)
	if err != nil {
		return err
	}
	*e = rec
	if rec.Refused {
		return fmt.Errorf("%w (nothing was sent): %s", ErrUncleRefused, rec.Message)
	}
	sent, err := send()
	*e = rec
	if sent || !rec.Changed {
		return err
	}
	if rerr := q.uncles.Retract(context.WithoutCancel(ctx), rec); rerr != nil {
		q.logger.ErrorContext(ctx, "retract the uncle edge of a failed delivery", "acting", acting, "target", target,
			"entry_point", entry, "error", rerr)
		alert.Raise(ctx, q.alerts, q.logger, fmt.Sprintf("queue_uncle_retraction/%d/%d", acting, target),
			fmt.Sprintf("Session %d's uncle edge over session %d stays recorded although its %s failed: the retraction failed (%v).",
				acting, target, action, rerr), map[string]any{"entry_point": entry})
	}
	return err
}

// entryPoint names the path for lineage: the surface the call entered by
// and the action ("mcp.follow_up", "rest.interrupt").
func entryPoint(ctx context.Context, action string) string {
	s := surface.Incoming(ctx)
	if s == "" {
		s = "grpc"
	}
	return s + "." + action
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

// openSession resolves ref for a call that sends the session a message:
// it must be the caller's to act on and still take messages.
func (q *Queue) openSession(ctx context.Context, ref string) (Session, error) {
	s, err := q.session(ctx, ref, principal.Principal.MayActOn)
	if err != nil {
		return Session{}, err
	}
	return s, closed(s)
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

func (q *Queue) poke(ctx context.Context, sessionID int64) {
	if q.drains == nil {
		return
	}
	if err := q.drains.Poke(ctx, sessionID); err != nil {
		// The message is stored and pending: the session's next turn end or
		// pause drains it. Say so loudly: an idle session waits until then.
		q.logger.ErrorContext(ctx, "poke the session's drain after an enqueue; the message waits for the session's next turn end or pause",
			"session_id", sessionID, "error", err)
	}
}

// Seal closes the session's queue for one archive attempt and says whether
// the archive may go ahead: refusal is the guard's text over a non-empty
// queue without force (the queue is unsealed again); clause is what the
// archive line adds about the messages it retires.
func (q *Queue) Seal(ctx context.Context, sessionID int64, attempt string, force bool) (refusal, clause string, live int, err error) {
	ms, err := q.messages.Seal(ctx, sessionID, attempt)
	if err != nil {
		return "", "", 0, err
	}
	if len(ms) > 0 && !force {
		if err := q.messages.Unseal(ctx, sessionID, attempt); err != nil {
			return "", "", 0, err
		}
		return domain.ArchiveRefusal(sessionID, ms), "", len(ms), nil
	}
	return "", domain.RetirementClause(ms), len(ms), nil
}

// Unseal reopens a queue the archive attempt sealed.
func (q *Queue) Unseal(ctx context.Context, sessionID int64, attempt string) error {
	return q.messages.Unseal(ctx, sessionID, attempt)
}

// Retire carries out an archive that committed at archivedAt: every live
// message becomes undelivered, and the loss pages once per session unless
// the spec's single exemption covers it (domain.AlertFor).
func (q *Queue) Retire(ctx context.Context, sessionID int64, forced bool, archivedAt time.Time) error {
	retired, err := q.messages.Retire(ctx, sessionID, archivedAt)
	if err != nil {
		return err
	}
	if len(retired) == 0 {
		return nil
	}
	a := domain.AlertFor(retired, forced)
	q.logger.InfoContext(ctx, "archive retired queued messages", "session_id", sessionID, "retired", len(retired),
		"paged", len(a.Page), "exempted_notices", a.ExemptedNotices)
	if a.Pages() {
		ids := make([]any, len(a.Page))
		for i, m := range a.Page {
			ids[i] = m.ID
		}
		alert.Raise(ctx, q.alerts, q.logger, fmt.Sprintf("queue_messages_retired/%d", sessionID), a.Summary(sessionID),
			map[string]any{"session_id": sessionID, "message_ids": ids, "forced": forced})
	}
	return nil
}

// Reopen lifts the queue's seal: the session was unarchived at
// unarchivedAt. Undelivered messages stay undelivered.
func (q *Queue) Reopen(ctx context.Context, sessionID int64, unarchivedAt time.Time) error {
	return q.messages.Reopen(ctx, sessionID, unarchivedAt)
}

func invalidIf(cond bool, field, msg string) error {
	if !cond {
		return nil
	}
	return validation.Invalid(field, "%s", msg)
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
