package drain

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Input starts a session's drain workflow.
type Input struct {
	SessionID int64
	// Delay before the first attempt of each run; 0 is DefaultDelay.
	Delay time.Duration
}

// Outcome is how the workflow's last run ended.
type Outcome string

// The outcomes.
const (
	// OutcomeDelivered: a message became the session's next turn.
	OutcomeDelivered Outcome = "delivered"
	// OutcomeEmpty: nothing was delivered and nothing failed (the queue was
	// empty, or lifecycle refused the delivery itself).
	OutcomeEmpty Outcome = "empty"
	// OutcomeRefused: the session cannot take a delivery now (running,
	// closed, blocked, parked); whoever moves it next drains the queue.
	OutcomeRefused Outcome = "refused"
	// OutcomeExhausted: the idle spell's attempts are spent; an operator was
	// paged and the messages stay pending.
	OutcomeExhausted Outcome = "exhausted"
	// OutcomeSessionGone: lifecycle no longer knows the session (it was
	// deleted); its queued messages are marked undelivered, saying so.
	OutcomeSessionGone Outcome = "session_gone"
)

// Exhausted is the alert the workflow raises when the attempts are spent.
type Exhausted struct {
	SessionID int64
	// Tried is how many attempts this run made and saw fail.
	Tried int
	// Counted is the idle spell's attempts as lifecycle last counted them
	// (0 when it never answered); above MaxAttempts, an earlier run had
	// already spent the budget.
	Counted int
	// LastError is the last failed attempt's error.
	LastError string
}

// Workflow drains a session's queue: each run waits in.Delay, then tries
// up to MaxAttempts times. Pokes that arrive during a run are answered by
// one more run once it ends; the workflow ends only when none is left
// unanswered, so no poke is lost to a workflow that was finishing.
func Workflow(ctx workflow.Context, in Input) (Outcome, error) {
	pokes := workflow.GetSignalChannel(ctx, SignalPoke)
	for {
		receivedPoke(pokes) // the start's own poke is this run's
		outcome, err := run(ctx, in)
		if err != nil {
			return "", err
		}
		if !receivedPoke(pokes) {
			return outcome, nil
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			// A new run starts with a run of its own: the pokes are answered.
			return "", workflow.NewContinueAsNewError(ctx, WorkflowName, in)
		}
		workflow.GetLogger(ctx).Info("poked while draining: draining again", "session_id", in.SessionID)
	}
}

// receivedPoke empties the poke channel and says whether it held any.
func receivedPoke(pokes workflow.ReceiveChannel) bool {
	got := false
	for pokes.ReceiveAsync(nil) {
		got = true
	}
	return got
}

func run(ctx workflow.Context, in Input) (Outcome, error) {
	logger := workflow.GetLogger(ctx)
	delay := in.Delay
	if delay <= 0 {
		delay = DefaultDelay
	}
	if err := workflow.Sleep(ctx, delay); err != nil {
		return "", err
	}
	// Each attempt is one try: the attempts' schedule is the retry policy.
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	alert := Exhausted{SessionID: in.SessionID}
	for ; alert.Tried < MaxAttempts; alert.Tried++ {
		if alert.Tried > 0 {
			if err := workflow.Sleep(ctx, AttemptInterval); err != nil {
				return "", err
			}
		}
		var a Attempt
		if err := workflow.ExecuteActivity(actx, ActivityRecordAttempt, in.SessionID).Get(ctx, &a); err != nil {
			if sessionGone(err) {
				return OutcomeSessionGone, abandon(ctx, in.SessionID)
			}
			alert.LastError = "count the attempt with lifecycle: " + rootMessage(err)
			logger.Warn("drain attempt failed", "session_id", in.SessionID, "attempt", alert.Tried+1, "error", err)
			continue
		}
		if !a.Counted {
			logger.Info("the session takes no delivery now; its next move drains the queue",
				"session_id", in.SessionID, "refusal", a.Refusal, "message", a.Message)
			return OutcomeRefused, nil
		}
		alert.Counted = a.Attempts
		if a.Attempts > MaxAttempts {
			// An earlier run spent this idle spell's budget (and paged).
			return OutcomeExhausted, raise(ctx, alert)
		}
		var delivered bool
		if err := workflow.ExecuteActivity(actx, ActivityDeliverPending, in.SessionID).Get(ctx, &delivered); err != nil {
			alert.LastError = rootMessage(err)
			logger.Warn("drain attempt failed", "session_id", in.SessionID, "attempt", alert.Tried+1, "error", err)
			continue
		}
		if delivered {
			return OutcomeDelivered, nil
		}
		return OutcomeEmpty, nil
	}
	return OutcomeExhausted, raise(ctx, alert)
}

// raise pages an operator, retrying a sick notification service for a
// while; an alert that cannot be raised is logged, and the workflow ends
// as it would have: the messages stay pending either way.
func raise(ctx workflow.Context, alert Exhausted) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
		},
	})
	err := workflow.ExecuteActivity(actx, ActivityRaiseExhausted, alert).Get(ctx, nil)
	if temporal.IsCanceledError(err) {
		return err
	}
	if err != nil {
		workflow.GetLogger(ctx).Error("could not raise the exhausted-drain alert: "+exhaustedSummary(alert),
			"dedup_key", AlertKey(alert.SessionID), "error", err)
	}
	return nil
}

// sessionGone says whether an activity failed because lifecycle no longer
// knows the session.
func sessionGone(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == ErrTypeSessionGone
}

// abandon marks a deleted session's queued messages undelivered, retrying
// the queue's own database for a while; if it never answers, the messages
// are logged as left pending (no session will ever take them, and the next
// poke's drain tries again).
func abandon(ctx workflow.Context, sessionID int64) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
		},
	})
	var n int
	err := workflow.ExecuteActivity(actx, ActivityAbandon, sessionID).Get(ctx, &n)
	if temporal.IsCanceledError(err) {
		return err
	}
	logger := workflow.GetLogger(ctx)
	if err != nil {
		logger.Error("the session no longer exists, and its queued messages could not be marked undelivered",
			"session_id", sessionID, "error", err)
		return nil
	}
	logger.Info("the session no longer exists: the drain ends, its queued messages marked undelivered",
		"session_id", sessionID, "undelivered", n)
	return nil
}

// rootMessage is an activity error's own message, without Temporal's
// "activity error (...)" wrapping.
func rootMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "timed out: " + timeout.Error()
	}
	return err.Error()
}
