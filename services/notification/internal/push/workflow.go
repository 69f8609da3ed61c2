package push

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/pager"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
)

// Input is the push workflow's input: the notification's message and the
// push route's sinks when it started.
type Input struct {
	NotificationID int64
	Sinks          []string
	Message        sink.Message
}

// bookkeeping runs the activities that write the notification service's
// own database: quick, and retried for as long as a restarting Postgres
// may take.
var bookkeeping = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    time.Minute,
		MaximumAttempts:    30,
	},
}

// Push delivers one notification to every sink of the push route at once,
// each retried on its own (pager.DeliverToSinks), and records it pushed as
// soon as the first sink has it. It fails, naming them, when any sink gave
// up; nobody waits on it, so that failure reaches only the Temporal Web UI
// and the worker's log.
func Push(ctx workflow.Context, in Input) error {
	var marked workflow.Future
	err := pager.DeliverToSinks(ctx, ActivityDeliverPush, in.Sinks, in.Message, func(string) {
		if marked == nil {
			marked = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, bookkeeping), ActivityMarkPushed, in.NotificationID)
		}
	})
	if marked != nil {
		if merr := marked.Get(ctx, nil); merr != nil {
			workflow.GetLogger(ctx).Error("the push was delivered but could not be recorded as pushed",
				"notification_id", in.NotificationID, "error", merr)
		}
	}
	if err != nil {
		return fmt.Errorf("push notification %d: %w", in.NotificationID, err)
	}
	return nil
}

// DebounceInput starts a session's debounce.
type DebounceInput struct {
	SessionID int64
	// Debounce is how long a pause waits for a later one.
	Debounce time.Duration
	// Pending, PendingAt and Handled carry the state over a
	// continue-as-new: the latest pause not pushed for yet (0: none) and
	// when its signal came, and the latest one whose debounce ended
	// (signals at or below it are redeliveries).
	Pending   int64
	PendingAt time.Time
	Handled   int64
}

// Paused is the signal a pause sends: the session's needs_input_count
// after it.
type Paused struct{ Marker int64 }

// NeedsInputDebounce holds back a session's needs-input push until its
// latest pause has stood for in.Debounce: each pause with a higher marker
// re-arms the timer, so a flapping session pushes once, for its latest
// pause. When the timer fires, PushNeedsInput asks lifecycle whether the
// session still waits from that pause and pushes if so; pauses that came
// in meanwhile are waited out in turn, and the workflow ends only when none
// is left unanswered. A signal whose marker is not above what it has seen
// is a redelivered effect and changes nothing.
func NeedsInputDebounce(ctx workflow.Context, in DebounceInput) (app.NeedsInputOutcome, error) {
	logger := workflow.GetLogger(ctx)
	st := &pauses{ch: workflow.GetSignalChannel(ctx, SignalPaused), pending: in.Pending, pendingAt: in.PendingAt, handled: in.Handled}
	debounce := in.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		// Lifecycle or the database may be restarting; the answer is read
		// afresh on every attempt, so a late one is still right.
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    20,
		},
	})

	if !st.unanswered() {
		// A fresh start: signal-with-start delivered its pause with it.
		var p Paused
		st.ch.Receive(ctx, &p)
		st.take(ctx, p)
	}
	st.drain(ctx)
	var (
		last    app.NeedsInputOutcome
		lastErr error
	)
	for st.unanswered() {
		st.waitOut(ctx, debounce)
		marker := st.pending
		// Pauses that come while lifecycle is asked are taken as they come,
		// so their debounce counts from their signal.
		check := workflow.ExecuteActivity(actx, ActivityPushNeedsInput, in.SessionID, marker)
		for checked := false; !checked; {
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(check, func(workflow.Future) { checked = true })
			st.listen(ctx, sel, nil)
			sel.Select(ctx)
		}
		last = app.NeedsInputOutcome{}
		lastErr = check.Get(ctx, &last)
		st.handled = marker
		switch {
		case lastErr != nil:
			logger.Error("could not end the needs-input debounce; this pause gets no push",
				"session_id", in.SessionID, "marker", marker, "error", lastErr)
		case last.Skipped != "":
			logger.Info("no needs-input push: "+last.Skipped, "session_id", in.SessionID, "marker", marker)
		default:
			logger.Info("needs-input push", "session_id", in.SessionID, "marker", marker,
				"notification_id", last.NotificationID, "pushed", last.Pushed)
		}
		st.drain(ctx)
		if st.unanswered() && workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return app.NeedsInputOutcome{}, workflow.NewContinueAsNewError(ctx, DebounceWorkflowName, DebounceInput{
				SessionID: in.SessionID, Debounce: debounce, Pending: st.pending, PendingAt: st.pendingAt, Handled: st.handled,
			})
		}
	}
	return last, lastErr
}

// pauses is what a debounce knows of its session's pauses.
type pauses struct {
	ch workflow.ReceiveChannel
	// pending is the latest pause seen, and pendingAt when its signal came.
	pending   int64
	pendingAt time.Time
	// handled is the latest pause whose debounce ended.
	handled int64
}

// unanswered reports whether a pause awaits its debounce's end.
func (s *pauses) unanswered() bool { return s.pending > s.handled }

// take keeps p if it is a later pause than any seen, and says so.
func (s *pauses) take(ctx workflow.Context, p Paused) bool {
	if p.Marker <= max(s.pending, s.handled) {
		return false
	}
	s.pending, s.pendingAt = p.Marker, workflow.Now(ctx)
	return true
}

// drain takes every signal already received.
func (s *pauses) drain(ctx workflow.Context) {
	var p Paused
	for s.ch.ReceiveAsync(&p) {
		s.take(ctx, p)
	}
}

// listen adds the signal channel to sel: a signal is taken, and later, when
// not nil, set when it was a later pause.
func (s *pauses) listen(ctx workflow.Context, sel workflow.Selector, later *bool) {
	sel.AddReceive(s.ch, func(c workflow.ReceiveChannel, _ bool) {
		var p Paused
		c.Receive(ctx, &p)
		if s.take(ctx, p) && later != nil {
			*later = true
		}
	})
}

// waitOut returns once debounce has passed since the latest pause's signal
// came: a later pause restarts the wait. A pause that came while the one
// before it was being checked has waited part of its debounce already.
func (s *pauses) waitOut(ctx workflow.Context, debounce time.Duration) {
	for {
		left := s.pendingAt.Add(debounce).Sub(workflow.Now(ctx))
		if left <= 0 {
			return
		}
		timerCtx, cancel := workflow.WithCancel(ctx)
		timer := workflow.NewTimer(timerCtx, left)
		fired, later := false, false
		for !fired && !later {
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(timer, func(workflow.Future) { fired = true })
			s.listen(ctx, sel, &later)
			sel.Select(ctx)
		}
		cancel()
		if fired {
			return
		}
	}
}
