package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
)

// WakeDelivery delivers a firing trigger's prompt as the session's next
// turn: now to an idle session, queued behind a running one's turn.
// Idempotent by key: a retry delivers or queues nothing more. It reports
// queued, or an error wrapping ErrWakeRefused when the session refuses the
// prompt (failed, archived, blocked), or any other error to retry.
type WakeDelivery interface {
	DeliverWake(ctx context.Context, sessionID int64, prompt, key string) (queued bool, err error)
}

// ErrWakeRefused: the session did not take the wake's prompt.
var ErrWakeRefused = errors.New("the session refused the wake-up's prompt")

// WakeKey is the idempotency key of a trigger's delivery.
func WakeKey(triggerID int64) string { return "trigger/" + strconv.FormatInt(triggerID, 10) }

// FireTrigger fires a trigger whose timer ran out (or a watcher that is
// due): armed → firing under the session's lock, never early; the prompt
// delivered; firing → fired. A retry after the first step finds it firing
// and delivers again (idempotently). A trigger no longer armed fires into
// nothing.
type FireTrigger struct {
	Repo     TriggerRepository
	Clock    clock.Clock
	Delivery WakeDelivery
}

// Fired says what firing did.
type Fired struct {
	Step    domain.FireStep
	Queued  bool
	Trigger domain.Trigger
}

// Handle fires trigger triggerID of session sessionID. An error is to be
// retried (domain.ErrEarly among them); everything else is an answer.
func (uc FireTrigger) Handle(ctx context.Context, sessionID, triggerID int64) (Fired, error) {
	ref := domain.SessionRef{ID: sessionID}
	var f domain.Firing
	_, err := uc.Repo.WithTrigger(ctx, ref, triggerID, func(s domain.Session, _ domain.Wakes, t domain.Trigger) (Change, error) {
		now := uc.Clock.Now()
		var err error
		if f, err = domain.StartFiring(s, t, now); err != nil {
			return Change{}, err
		}
		return uc.move(s, f, now), nil
	})
	switch {
	case errors.Is(err, domain.ErrNotFound):
		// The session was deleted, and its triggers with it.
		return Fired{Step: domain.FireNothing}, nil
	case err != nil:
		return Fired{}, err
	case f.Step != domain.FireDeliver:
		return Fired{Step: f.Step, Trigger: f.Trigger}, nil
	}
	queued, derr := uc.Delivery.DeliverWake(ctx, sessionID, f.Trigger.TurnPrompt(), WakeKey(triggerID))
	if derr != nil && !errors.Is(derr, ErrWakeRefused) {
		return Fired{}, fmt.Errorf("deliver wake-up #%d of session %d: %w", triggerID, sessionID, derr)
	}
	_, err = uc.Repo.WithTrigger(ctx, ref, triggerID, func(s domain.Session, _ domain.Wakes, t domain.Trigger) (Change, error) {
		now := uc.Clock.Now()
		switch {
		case derr == nil:
			f = domain.FinishFiring(s, t, now, queued)
		case t.Status == domain.TriggerFiring && (s.Status == domain.StatusFailed || s.Status == domain.StatusArchived):
			f = domain.CancelFiring(s, t, now, fmt.Sprintf("fired on a %s session, which takes no prompt (%v); nothing to do", s.Status, derr))
		default:
			// Refused for a passing reason (blocked on an elicitation):
			// retried until the session takes it.
			return Change{}, fmt.Errorf("deliver wake-up #%d of session %d: %w", triggerID, sessionID, derr)
		}
		return uc.move(s, f, now), nil
	})
	if err != nil {
		return Fired{}, err
	}
	return Fired{Step: f.Step, Queued: queued, Trigger: f.Trigger}, nil
}

func (uc FireTrigger) move(s domain.Session, f domain.Firing, now time.Time) Change {
	if !f.Write {
		return Change{Nothing: true}
	}
	m := &TriggerMove{Trigger: f.Trigger, Timeline: f.Timeline, At: now, AsksFirstTurn: f.AsksFirstTurn}
	if f.Session.Markers != s.Markers {
		markers := f.Session.Markers
		m.Markers = &markers
	}
	return Change{Triggered: m}
}

// LocalWakeDelivery delivers a wake without a queue (LIFECYCLE_QUEUE_ADDR
// none): lifecycle's own delivery to an idle session, under the wake's key
// as the delivery id. A running session has no queue to wait in, so the
// delivery is retried (by the timer's activity) until its turn ends.
type LocalWakeDelivery struct{ Deliver DeliverTurn }

// DeliverWake implements WakeDelivery.
func (d LocalWakeDelivery) DeliverWake(ctx context.Context, sessionID int64, prompt, key string) (bool, error) {
	got, err := d.Deliver.Handle(ctx, sessionID, domain.DeliverCommand{
		DeliveryID: key, Prompt: prompt, Mode: domain.DeliverToIdle, What: "a wake-up (" + key + ")",
	})
	switch {
	case err != nil:
		return false, err
	case got.Refused == nil:
		return false, nil
	case got.Refused.Reason == domain.RefusedBusy:
		return false, fmt.Errorf("session %d %s; with no queue configured the wake waits for it to be idle", sessionID, got.Refused.Message)
	}
	return false, fmt.Errorf("%w: session %d %s", ErrWakeRefused, sessionID, got.Refused.Message)
}
