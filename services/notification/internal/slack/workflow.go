package slack

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
)

// Names registered with the worker; part of the workflows' histories.
const (
	EventWorkflowName    = "zimmer.notification.SlackEvent"
	ActivityProcessEvent = "zimmer.notification.ProcessSlackEvent"
	ActivityGiveUpEvent  = "zimmer.notification.GiveUpSlackEvent"
)

// EventWorkflowID names the processing of event id: Slack's event id is
// the business key, so a redelivery's start is refused as a duplicate.
func EventWorkflowID(eventID string) string { return "slack/event/" + eventID }

// processing retries one event's processing while the services it calls
// or the database restart, for a day; each attempt resumes after the
// steps recorded done.
var processing = workflow.ActivityOptions{
	StartToCloseTimeout:    time.Minute,
	ScheduleToCloseTimeout: 24 * time.Hour,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    time.Minute,
	},
}

// pageOptions retry the give-up's page while the service's own database
// restarts.
var pageOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 30},
}

// Event processes one accepted event (slack/event/<id>) and returns what
// became of it. An event whose processing is given up (a day of retries)
// pages an operator: Slack was told it arrived, so it is never dropped
// silently.
func Event(ctx workflow.Context, eventID string) (string, error) {
	var outcome string
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, processing), ActivityProcessEvent, eventID).Get(ctx, &outcome)
	if err != nil {
		if perr := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, pageOptions), ActivityGiveUpEvent, eventID, err.Error()).Get(ctx, nil); perr != nil {
			workflow.GetLogger(ctx).Error("could not page about a slack event given up", "event_id", eventID, "error", perr)
		}
		return "", fmt.Errorf("process slack event %s: %w", eventID, err)
	}
	workflow.GetLogger(ctx).Info("slack event processed", "event_id", eventID, "outcome", outcome)
	return outcome, nil
}

// Activities are the event workflow's I/O.
type Activities struct {
	Process app.ProcessSlackEvent
	// Raise is the service's own RaiseAlert.
	Raise app.RaiseAlert
}

// ProcessSlackEvent runs the use case.
func (a *Activities) ProcessSlackEvent(ctx context.Context, eventID string) (string, error) {
	return a.Process.Handle(ctx, eventID)
}

// GiveUpSlackEvent pages about an event whose processing was given up,
// once per event (its dedup key).
func (a *Activities) GiveUpSlackEvent(ctx context.Context, eventID, why string) error {
	_, _, err := a.Raise.Handle(ctx, domain.Raise{
		DedupKey: "slack/event/" + eventID,
		Summary:  fmt.Sprintf("Slack event %s was acknowledged but could not be processed; its row in slack_events keeps it", eventID),
		Details:  map[string]any{"event_id": eventID, "error": why},
	})
	return err
}

// Registry is where the workflow and its activity are registered.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register puts the event workflow and its activity on r.
func Register(r Registry, a *Activities) {
	r.RegisterWorkflowWithOptions(Event, workflow.RegisterOptions{Name: EventWorkflowName})
	r.RegisterActivityWithOptions(a.ProcessSlackEvent, activity.RegisterOptions{Name: ActivityProcessEvent})
	r.RegisterActivityWithOptions(a.GiveUpSlackEvent, activity.RegisterOptions{Name: ActivityGiveUpEvent})
}

// WorkflowStarter is what Starter needs of the Temporal client.
type WorkflowStarter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// Starter starts event workflows on the service's task queue.
type Starter struct {
	Client    WorkflowStarter
	TaskQueue string
}

var _ app.SlackEventStarter = Starter{}

// StartSlackEvent implements app.SlackEventStarter. An event's workflow is
// started at most once ever (REJECT_DUPLICATE): a second start, running or
// ended, is refused by Temporal and is no error here.
func (s Starter) StartSlackEvent(ctx context.Context, eventID string) error {
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    EventWorkflowID(eventID),
		TaskQueue:             s.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, EventWorkflowName, eventID)
	if err != nil && !temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		return fmt.Errorf("%w: start processing slack event %s: %w", app.ErrNotStarted, eventID, err)
	}
	return nil
}
