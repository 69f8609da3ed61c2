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

// Push delivers one notification to every sink of the push route: the
// failure's and an agent's message's push (push/<notification id>). It
// fails, naming them, when any sink gave up; nobody waits on it, so that
// failure reaches only the Temporal Web UI and the worker's log.
func Push(ctx workflow.Context, in Input) error {
	return deliver(ctx, in)
}

// deliver sends in's message to every sink at once, each retried on its
// own (pager.DeliverToSinks: the alerts' rule), and records the
// notification pushed as soon as the first sink has it.
func deliver(ctx workflow.Context, in Input) error {
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
	// Sinks are the push route's sink names when it started.
	Sinks []string
	// Pending, PendingAt and Handled carry the state over a
	// continue-as-new: the latest pause not answered yet (0: none) and
	// when it happened, and the latest one whose debounce ended (signals
	// at or below it are redeliveries).
	Pending   int64
	PendingAt time.Time
	Handled   int64
}

// Paused is the signal a pause sends: the session's needs_input_count
// after it, and when the pause happened (lifecycle's event time).
type Paused struct {
	Marker int64
	At     time.Time
}

// DebounceResult is how a debounce ended: its last pause's outcome.
type DebounceResult struct {
	Marker int64
	// NotificationID is the last pause's notification (0: none).
	NotificationID int64
	// Skipped says why the last pause earned no push, or "".
	Skipped string
}

// NeedsInputDebounce holds back a session's needs-input push until its
// latest pause has stood for in.Debounce: each pause with a higher marker
// re-arms the timer, so a flapping session pushes once, for its latest
// pause. When the timer fires, RecordNeedsInput (a local activity: the
// worker runs it at once, with no round trip through a task queue) asks
// lifecycle whether the session still waits from that pause and creates
// its notification if so, which the workflow then delivers beside its
// other work, so a slow sink never holds up the next pause. Pauses that
// came in meanwhile are waited out in turn, and the workflow ends only
// when none is left unanswered and every delivery is done. A signal whose
// marker is not above what it has seen is a redelivered effect and
// changes nothing.
func NeedsInputDebounce(ctx workflow.Context, in DebounceInput) (DebounceResult, error) {
	logger := workflow.GetLogger(ctx)
	st := &pauses{ch: workflow.GetSignalChannel(ctx, SignalPaused), pending: in.Pending, pendingAt: in.PendingAt, handled: in.Handled}
	debounce := in.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		// Lifecycle or the database may be restarting; the answer is read
		// afresh on every attempt, so a late one is still right.
		ScheduleToCloseTimeout: 15 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	})

	if !st.unanswered() {
		// A fresh start: signal-with-start delivered its pause with it.
		var p Paused
		st.ch.Receive(ctx, &p)
		st.take(ctx, p)
	}
	var (
		result     DebounceResult
		resultErr  error
		delivering int
	)
	for {
		st.drain(ctx)
		for st.unanswered() {
			st.waitOut(ctx, debounce)
			marker := st.pending
			// Pauses that come while lifecycle is asked are taken as they
			// come, so a later pause is waited out in its turn.
			check := workflow.ExecuteLocalActivity(lctx, ActivityRecordNeedsInput, in.SessionID, marker)
			for checked := false; !checked; {
				sel := workflow.NewSelector(ctx)
				sel.AddFuture(check, func(workflow.Future) { checked = true })
				st.listen(ctx, sel, nil)
				sel.Select(ctx)
			}
			var out app.NeedsInputOutcome
			resultErr = check.Get(ctx, &out)
			st.handled = marker
			result = DebounceResult{Marker: marker, NotificationID: out.Notification.ID, Skipped: out.Skipped}
			switch {
			case resultErr != nil:
				logger.Error("could not end the needs-input debounce; this pause gets no push",
					"session_id", in.SessionID, "marker", marker, "error", resultErr)
			case out.Skipped != "":
				logger.Info("no needs-input push: "+out.Skipped, "session_id", in.SessionID, "marker", marker)
			case out.Deliver:
				delivering++
				push := Input{NotificationID: out.Notification.ID, Sinks: in.Sinks, Message: Message(out.Notification)}
				workflow.Go(ctx, func(ctx workflow.Context) {
					defer func() { delivering-- }()
					if err := deliver(ctx, push); err != nil {
						logger.Error("needs-input push failed", "session_id", in.SessionID, "marker", marker, "error", err)
					}
				})
			default:
				logger.Info("the needs-input push had reached a sink already", "session_id", in.SessionID, "marker", marker,
					"notification_id", out.Notification.ID)
			}
			st.drain(ctx)
			if st.unanswered() && delivering == 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
				next := in
				next.Debounce, next.Pending, next.PendingAt, next.Handled = debounce, st.pending, st.pendingAt, st.handled
				return DebounceResult{}, workflow.NewContinueAsNewError(ctx, DebounceWorkflowName, next)
			}
		}
		if delivering == 0 {
			return result, resultErr
		}
		// Deliveries are still retrying: wait for them, or for a pause.
		if err := workflow.Await(ctx, func() bool { return delivering == 0 || st.ch.Len() > 0 }); err != nil {
			return result, err
		}
	}
}

// pauses is what a debounce knows of its session's pauses.
type pauses struct {
	ch workflow.ReceiveChannel
	// pending is the latest pause seen, and pendingAt when it happened.
	pending   int64
	pendingAt time.Time
	// handled is the latest pause whose debounce ended.
	handled int64
}

// unanswered reports whether a pause awaits its debounce's end.
func (s *pauses) unanswered() bool { return s.pending > s.handled }

// take keeps p if it is a later pause than any seen, and says so. Its
// debounce counts from when the pause happened, not from when the signal
// reached this workflow: a first workflow task that waited in its task
// queue, or a relay that delivered the effect late, does not make the push
// later. A pause time ahead of the workflow's clock (clocks disagree) is
// taken as now.
func (s *pauses) take(ctx workflow.Context, p Paused) bool {
	if p.Marker <= max(s.pending, s.handled) {
		return false
	}
	s.pending, s.pendingAt = p.Marker, workflow.Now(ctx)
	if !p.At.IsZero() && p.At.Before(s.pendingAt) {
		s.pendingAt = p.At
	}
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

// waitOut returns once debounce has passed since the latest pause: a later
// pause restarts the wait. A pause that came while the one before it was
// being checked has waited part of its debounce already.
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
