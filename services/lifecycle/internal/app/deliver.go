package app

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

// DeliverTurn makes a prompt a session's next turn (domain.Deliver), once
// per delivery id: the queue calls it inside its own claim transaction, and
// when lifecycle committed but the queue's commit failed, the queue's retry
// is answered with the first delivery rather than delivered again.
type DeliverTurn struct {
	Repo  SessionRepository
	Clock clock.Clock
}

// Delivered is DeliverTurn's answer: the session as it stands after the
// call and either the turn's job (AlreadyDelivered when an earlier call
// with the same id made it) or the refusal.
type Delivered struct {
	Session          domain.Session
	JobID            string
	AlreadyDelivered bool
	Refused          *domain.DeliveryRefused
}

// Handle validates cmd and decides the delivery under session id's lock.
func (uc DeliverTurn) Handle(ctx context.Context, id int64, cmd domain.DeliverCommand) (Delivered, error) {
	if id <= 0 {
		return Delivered{}, validation.Invalid("session_id", "is required: the numeric id of the session")
	}
	if err := cmd.Validate(); err != nil {
		return Delivered{}, err
	}
	var answer Delivered
	c, err := uc.Repo.Deliver(ctx, id, cmd.DeliveryID, func(s domain.Session, wakes domain.Wakes, prior *DeliveryRecord) (Change, error) {
		answer = Delivered{Session: s} // a retried transaction decides afresh
		if prior != nil {
			if prior.SessionID != s.ID {
				return Change{}, &domain.PreconditionError{Reason: fmt.Sprintf(
					"delivery %q was made to session %d, not %d; a delivery id names one delivery", cmd.DeliveryID, prior.SessionID, s.ID)}
			}
			answer.JobID, answer.AlreadyDelivered = prior.JobID, true
			return Change{Nothing: true}, nil
		}
		env := domain.Env{Now: uc.Clock.Now(), Wakes: wakes, FreshJobID: "delivery/" + uuid.NewString()}
		out, refused, err := domain.Deliver(s, cmd, env)
		switch {
		case err != nil:
			return Change{}, err
		case refused != nil:
			answer.Refused = refused
			return Change{Nothing: true}, nil
		}
		answer.JobID = out.Session.Markers.RunningJobID
		return Change{Delivered: &Delivery{ID: cmd.DeliveryID, Outcome: out}}, nil
	})
	if err != nil {
		return Delivered{}, err
	}
	if c.Delivered != nil {
		answer.Session = c.Delivered.Outcome.Session // as committed, with its new version
	}
	return answer, nil
}

// RecordDrainAttempt counts one attempt of the queue's after-pause drain
// (domain.RecordDrainAttempt) under the session's lock.
type RecordDrainAttempt struct {
	Repo  SessionRepository
	Clock clock.Clock
}

// Handle returns the attempts of this idle spell, this one included, or
// why none was counted.
func (uc RecordDrainAttempt) Handle(ctx context.Context, id int64) (int, *domain.DeliveryRefused, error) {
	if id <= 0 {
		return 0, nil, validation.Invalid("session_id", "is required: the numeric id of the session")
	}
	var (
		attempts int
		refused  *domain.DeliveryRefused
	)
	_, err := uc.Repo.Update(ctx, domain.SessionRef{ID: id}, func(s domain.Session, wakes domain.Wakes) (Change, error) {
		attempts, refused = 0, nil // a retried transaction decides afresh
		counted, why := domain.RecordDrainAttempt(s, wakes.Asleep(uc.Clock.Now()))
		if why != nil {
			refused = why
			return Change{Nothing: true}, nil
		}
		attempts = counted.Markers.DrainAttempts
		return Change{Marked: &Marking{Session: counted}}, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return attempts, refused, nil
}
