package drain

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/zimmerhq/zimmer/services/platform/alert"
)

// Activities are the drain workflow's I/O.
type Activities struct {
	Lifecycle Lifecycle
	Deliverer Deliverer
	Alerts    alert.Raiser
}

// ActivityRegistry is where activities are registered: a worker, or the
// test suite's environments.
type ActivityRegistry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers the activities under their names.
func (a *Activities) Register(r ActivityRegistry) {
	r.RegisterActivityWithOptions(a.RecordDrainAttempt, activity.RegisterOptions{Name: ActivityRecordAttempt})
	r.RegisterActivityWithOptions(a.DeliverPending, activity.RegisterOptions{Name: ActivityDeliverPending})
	r.RegisterActivityWithOptions(a.RaiseExhausted, activity.RegisterOptions{Name: ActivityRaiseExhausted})
	r.RegisterActivityWithOptions(a.Abandon, activity.RegisterOptions{Name: ActivityAbandon})
}

// RecordDrainAttempt counts one attempt with lifecycle. A session
// lifecycle does not know is a non-retryable ErrTypeSessionGone: no later
// attempt can find it.
func (a *Activities) RecordDrainAttempt(ctx context.Context, sessionID int64) (Attempt, error) {
	at, err := a.Lifecycle.RecordDrainAttempt(ctx, sessionID)
	if errors.Is(err, ErrSessionNotFound) {
		return Attempt{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeSessionGone, err)
	}
	return at, err
}

// Abandon ends a deleted session's queued messages undelivered.
func (a *Activities) Abandon(ctx context.Context, sessionID int64) (int, error) {
	return a.Deliverer.Abandon(ctx, sessionID)
}

// DeliverPending delivers the session's next pending message.
func (a *Activities) DeliverPending(ctx context.Context, sessionID int64) (bool, error) {
	return a.Deliverer.DeliverPending(ctx, sessionID)
}

// RaiseExhausted pages an operator about a drain whose attempts are spent,
// once per session: notification deduplicates by AlertKey.
func (a *Activities) RaiseExhausted(ctx context.Context, e Exhausted) error {
	details := map[string]any{
		"session_id":       e.SessionID,
		"attempts_tried":   e.Tried,
		"attempts_counted": e.Counted,
	}
	if e.LastError != "" {
		details["last_error"] = e.LastError
	}
	if err := a.Alerts.RaiseAlert(ctx, AlertKey(e.SessionID), exhaustedSummary(e), details); err != nil {
		return fmt.Errorf("raise %s: %w", AlertKey(e.SessionID), err)
	}
	return nil
}

// exhaustedSummary says what happened, what did not (nothing was lost) and
// what an operator can do.
func exhaustedSummary(e Exhausted) string {
	var what string
	if e.Counted > MaxAttempts {
		what = fmt.Sprintf("Zimmer stopped trying to deliver the queued messages of idle session %d: "+
			"its %d delivery attempts for this idle spell are spent (lifecycle counts %d).", e.SessionID, MaxAttempts, e.Counted)
	} else {
		what = fmt.Sprintf("Zimmer could not deliver the queued messages of idle session %d: "+
			"%d attempts, %s apart, failed; the last with: %s.", e.SessionID, e.Tried, AttemptInterval, e.LastError)
	}
	return what + " The messages stay pending and go out with the session's next turn. " +
		"Find the cause in the queue's and lifecycle's logs, then give the session a turn " +
		"(follow_up, or restart it) to deliver them, or delete the queued messages that should no longer go."
}
