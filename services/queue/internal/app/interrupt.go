package app

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/alert"
	"github.com/zimmerhq/zimmer/services/platform/validation"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// SendNow delivers a pending message to the session at once when it is at
// rest; on a running session it moves the message to the front, to be the
// next turn (delivered false).
type SendNow struct {
	Sessions Sessions
	Messages Messages
	Turns    Turns
	Uncles   Uncles
	Alerts   alert.Raiser
	Logger   *slog.Logger
}

// Handle sends message id of the session ref names now, as actingID.
func (uc SendNow) Handle(ctx context.Context, ref string, id, actingID int64) (domain.Message, bool, error) {
	var vs validation.Violations
	if domain.CheckPick(&vs, id, actingID); vs.Err() != nil {
		return domain.Message{}, false, vs.Err()
	}
	s, err := openSession(ctx, uc.Sessions, ref)
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
	err = uncleGuard{uc.Uncles, uc.Alerts, uc.Logger}.around(ctx, actingID, s.ID, "send_now", &uncle, func() (bool, error) {
		if s.Status != rules.StatusRunning {
			send, last := sender(uc.Turns, ModeIdle, "", false)
			m, delivered, err = uc.Messages.Deliver(ctx, s.ID, domain.Pick{MessageID: id}, send)
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
		m, err = uc.Messages.Update(ctx, s.ID, id, domain.Edit{}, 1)
		return err == nil, err
	})
	return m, delivered, err
}

// Interrupt stops the session's running turn through the runner's ladder
// and delivers the message as the next turn (at once, when the session is
// at rest). Interrupts of one session are served one at a time, in the
// order they arrive, so each message is delivered exactly once, in order.
type Interrupt struct {
	Sessions Sessions
	Messages Messages
	Turns    Turns
	Runner   Interrupter
	Pauser   Pauser
	Uncles   Uncles
	Alerts   alert.Raiser
	Logger   *slog.Logger
}

// Handle interrupts the session ref names with its message id, as
// actingID.
func (uc Interrupt) Handle(ctx context.Context, ref string, id, actingID int64) (domain.Message, bool, error) {
	var vs validation.Violations
	if domain.CheckPick(&vs, id, actingID); vs.Err() != nil {
		return domain.Message{}, false, vs.Err()
	}
	s, err := openSession(ctx, uc.Sessions, ref)
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
	err = uncleGuard{uc.Uncles, uc.Alerts, uc.Logger}.around(ctx, actingID, s.ID, "interrupt", &uncle, func() (bool, error) {
		m, interrupted, err = uc.interrupter().interrupt(ctx, s, id)
		return err == nil, err
	})
	return m, interrupted, err
}

// interrupter is the step that halts the turn and delivers in its place.
func (uc Interrupt) interrupter() interrupter {
	return interrupter{sessions: uc.Sessions, messages: uc.Messages, turns: uc.Turns, runner: uc.Runner, pauser: uc.Pauser, logger: uc.Logger}
}

// interruptTimeout bounds an interrupt's halt and delivery once begun,
// whatever its caller does: the runner's termination ladder, then one
// delivery to lifecycle.
const interruptTimeout = 2 * time.Minute

// interrupter halts a session's running turn and delivers a message in its
// place: the step Interrupt and a forced follow-up share.
type interrupter struct {
	sessions Sessions
	messages Messages
	turns    Turns
	runner   Interrupter
	pauser   Pauser
	logger   *slog.Logger
}

// interrupt halts the turn that was running when the interrupt was asked
// (asked, the session as read then) and delivers message id in its place.
//
// The halt comes first, outside the session's interrupt lease: the turn-end
// hand-over takes that lease from inside the session's workflow, which must
// be free to answer the halt. The delivery then happens under the lease,
// and only in place of the halted turn (AFTER_INTERRUPT from that job):
// when interrupts are sent together, the first delivered replaces the
// turn, and the turn it makes runs whole. So does one a turn end handed
// over, and one the runner found still starting or already ended (it
// halts nothing then). Such a message goes to the front of the queue
// instead, to be handed over when the running turn ends (m pending,
// interrupted false).
func (it interrupter) interrupt(ctx context.Context, asked Session, id int64) (m domain.Message, interrupted bool, err error) {
	if it.runner == nil {
		return domain.Message{}, false, ErrNoRunner
	}
	sessionID := asked.ID
	// Check before halting anything: an interrupt for a message already
	// sent (a repeated interrupt, say) would halt the very turn that
	// message became and deliver nothing in its place.
	pending := func(ctx context.Context) error {
		msg, err := it.messages.Message(ctx, sessionID, id)
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
			_, _, err := it.messages.Deliver(ctx, sessionID, domain.Pick{MessageID: id},
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
		now, err := it.sessions.Get(ctx, strconv.FormatInt(sessionID, 10))
		if err != nil {
			return domain.Message{}, false, err
		}
		turn = runningTurn(now)
	}
	// From the halt on, the caller going away (a client that gave up, a
	// gateway that died) must not stop the work half done: a turn halted
	// with nothing delivered in its place leaves the session running with
	// no process. The runner may halt it even as this call's answer is lost.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), interruptTimeout)
	defer cancel()
	if turn != "" {
		if interrupted, err = it.runner.InterruptTurn(ctx, sessionID, turn, "queue interrupt"); err != nil {
			return domain.Message{}, false, err
		}
	}
	err = it.messages.LockForInterrupt(ctx, sessionID, func(ctx context.Context) error {
		// Again under the lease: a concurrent interrupt with the same message
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
				d, err := it.turns.Deliver(ctx, Delivery{SessionID: sessionID, ID: domain.DeliveryID(msg), Prompt: msg.Content,
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
		m, ok, err = it.messages.Deliver(ctx, sessionID, domain.Pick{MessageID: id}, send)
		if err == nil && busy {
			// Next: handed over as the running turn ends, which the queue's
			// lease orders after this.
			interrupted = false
			m, err = it.messages.Update(ctx, sessionID, id, domain.Edit{}, 1)
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
			if perr := it.pauser.Pause(ctx, sessionID, "queue"); perr != nil { // ctx is detached from the caller
				it.logger.ErrorContext(ctx, "an interrupted turn's delivery failed and so did the pause after it",
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
