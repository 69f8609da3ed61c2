package drain

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"

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
	r.RegisterActivityWithOptions(a.RetireDeleted, activity.RegisterOptions{Name: ActivityRetireDeleted})
}

// RecordDrainAttempt counts one attempt with lifecycle.
func (a *Activities) RecordDrainAttempt(ctx context.Context, sessionID int64) (Attempt, error) {
	return a.Lifecycle.RecordDrainAttempt(ctx, sessionID)
}

// DeliverPending delivers the session's next pending message.
func (a *Activities) DeliverPending(ctx context.Context, sessionID int64) (bool, error) {
	return a.Deliverer.DeliverPending(ctx, sessionID)
}

// Deleted is the input of RetireDeleted: the session lifecycle no longer
// knows, and lifecycle's words for it.
type Deleted struct {
	SessionID int64
	Reason    string
}

// RetireDeleted marks the queue of a deleted session undelivered.
func (a *Activities) RetireDeleted(ctx context.Context, d Deleted) error {
	return a.Deliverer.RetireDeleted(ctx, d.SessionID, d.Reason)
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
