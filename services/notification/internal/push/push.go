// Package push carries the operator's notifications to the sinks of the
// push route (NOTIFICATION_SINKS) on Temporal:
//
//   - Push (workflow push/<notification id>) delivers one stored
//     notification to every sink, each its own activity retried with
//     backoff (pager.DeliverToSinks: the alerts' rule), and records when
//     the first sink had it: the push of a failure and of an agent's
//     message.
//   - NeedsInputDebounce (workflow session/<session id>/debounce/needs-input) is a
//     session's pauses: each pause signals it (signal-with-start, signal
//     paused carrying the pause's needs_input_count), and it pushes for the
//     latest pause once no other pause followed for the debounce, if
//     lifecycle then says the session still waits from that pause
//     (app.RecordNeedsInput, a local activity), delivering the same way
//     itself. A flapping session pushes once.
//
// Starter starts both for the app (app.Pusher, app.Debouncer); Log is the
// push without Temporal.
package push

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/platform/workflowid"
)

// Names registered with the worker. They are part of the workflows'
// histories: renaming one strands the workflows already running.
const (
	PushWorkflowName     = "zimmer.notification.Push"
	DebounceWorkflowName = "zimmer.notification.NeedsInputDebounce"

	ActivityDeliverPush      = "zimmer.notification.DeliverPush"
	ActivityMarkPushed       = "zimmer.notification.MarkPushed"
	ActivityRecordNeedsInput = "zimmer.notification.RecordNeedsInput"

	// SignalPaused tells a session's debounce that it paused (Paused).
	SignalPaused = "paused"
)

// DefaultDebounce is how long a pause waits for a later one before its
// push goes out (the spec's NEEDS_INPUT_DEBOUNCE).
const DefaultDebounce = 60 * time.Second

// PushWorkflowID names notification id's push, so a notification is pushed
// by one workflow at a time.
func PushWorkflowID(notificationID int64) string { return fmt.Sprintf("push/%d", notificationID) }

// DebounceWorkflowID names session's needs-input debounce.
func DebounceWorkflowID(sessionID int64) string { return workflowid.NeedsInputDebounce(sessionID) }

// Message is what the sinks deliver for n, keyed notification/<id> so a
// receiver can drop a retried delivery that had in fact arrived.
func Message(n domain.Notification) sink.Message {
	m := sink.Message{
		Kind:     sink.KindPush,
		Type:     string(n.Type),
		Title:    n.PushTitle(),
		Body:     n.Body,
		DedupKey: n.PushDedupKey(),
		Time:     n.CreatedAt,
	}
	if n.SessionID > 0 {
		m.SessionID = strconv.FormatInt(n.SessionID, 10)
	}
	return m
}

// WorkflowStarter is what Starter needs of the Temporal client.
type WorkflowStarter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
	SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
		options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error)
}

// Starter starts pushes and signals debounces on the service's task queue.
type Starter struct {
	client    WorkflowStarter
	taskQueue string
	// sinks are the push route's sink names, fixed in each push's input so
	// a replay is deterministic.
	sinks    []string
	debounce time.Duration
}

var (
	_ app.Pusher    = (*Starter)(nil)
	_ app.Debouncer = (*Starter)(nil)
)

// NewStarter returns a Starter pushing to sinks through workflows on
// taskQueue; a debounce of zero or less is DefaultDebounce.
func NewStarter(c WorkflowStarter, taskQueue string, sinks []sink.Sink, debounce time.Duration) *Starter {
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	names := make([]string, len(sinks))
	for i, s := range sinks {
		names[i] = s.Name()
	}
	return &Starter{client: c, taskQueue: taskQueue, sinks: names, debounce: debounce}
}

// Push implements app.Pusher: it starts push/<id>. While that workflow
// runs, a second start joins it; once it ended, a new one may start (the
// caller pushes only what has not reached a sink).
func (s *Starter) Push(ctx context.Context, n domain.Notification) error {
	_, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    PushWorkflowID(n.ID),
		TaskQueue:             s.taskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Memo:                  map[string]any{"session_id": n.SessionID, "type": string(n.Type)},
	}, PushWorkflowName, Input{NotificationID: n.ID, Sinks: s.sinks, Message: Message(n)})
	if err != nil && !temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		return fmt.Errorf("%w: start the push of notification %d: %w", app.ErrNotStarted, n.ID, err)
	}
	return nil
}

// Paused implements app.Debouncer: it signals the session's debounce,
// starting it when none runs. The signal and the start are one call, so a
// pause is never lost between a debounce's last look and its end.
func (s *Starter) Paused(ctx context.Context, sessionID, marker int64, at time.Time) error {
	id := DebounceWorkflowID(sessionID)
	_, err := s.client.SignalWithStartWorkflow(ctx, id, SignalPaused, Paused{Marker: marker, At: at}, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             s.taskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Memo:                  map[string]any{"session_id": sessionID},
	}, DebounceWorkflowName, DebounceInput{SessionID: sessionID, Debounce: s.debounce, Sinks: s.sinks})
	if err != nil {
		return fmt.Errorf("%w: signal session %d's needs-input debounce (pause %d): %w", app.ErrNotStarted, sessionID, marker, err)
	}
	return nil
}

// Log pushes by logging, through the log sink: the push of a service run
// without Temporal (component tests), where the log is the one place a
// push can go. Pushed, when set, records it pushed, so a redelivered
// effect does not log it again.
type Log struct {
	Logger *slog.Logger
	Pushed func(ctx context.Context, id int64) (took time.Duration, first bool, err error)
}

var _ app.Pusher = Log{}

// Push implements app.Pusher.
func (l Log) Push(ctx context.Context, n domain.Notification) error {
	if err := (sink.Log{Logger: l.Logger}).Send(ctx, Message(n)); err != nil {
		return err
	}
	if l.Pushed == nil {
		return nil
	}
	_, _, err := l.Pushed(ctx, n.ID)
	return err
}
