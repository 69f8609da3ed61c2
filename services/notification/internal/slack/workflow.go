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
)

// Names registered with the worker; part of the workflows' histories.
const (
	EventWorkflowName    = "zimmer.notification.SlackEvent"
	ActivityProcessEvent = "zimmer.notification.ProcessSlackEvent"
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

// Event processes one accepted event (slack/event/<id>) and returns what
// became of it.
func Event(ctx workflow.Context, eventID string) (string, error) {
	var outcome string
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, processing), ActivityProcessEvent, eventID).Get(ctx, &outcome)
	if err != nil {
		return "", fmt.Errorf("process slack event %s: %w", eventID, err)
	}
	workflow.GetLogger(ctx).Info("slack event processed", "event_id", eventID, "outcome", outcome)
	return outcome, nil
}

// Activities are the event workflow's I/O.
type Activities struct {
	Process app.ProcessSlackEvent
}

// ProcessSlackEvent runs the use case.
func (a *Activities) ProcessSlackEvent(ctx context.Context, eventID string) (string, error) {
	return a.Process.Handle(ctx, eventID)
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
