package pager

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/notification/internal/sink"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
)

// startTimeout bounds starting a page workflow, so a slow Temporal holds a
// raise up for at most this long before the fallback pages.
const startTimeout = 5 * time.Second

// Temporal pages by starting the page workflow (alert/<id>) on the
// service's task queue, which delivers to every sink of the alert route with
// retries. When the start fails (Temporal is down) it returns why and, with
// a Fallback (the raise's), logs that and pages through the Fallback at
// once, so an operator hears of the alert before the re-drive starts its
// page.
type Temporal struct {
	Client    client.Client
	TaskQueue string
	// Sinks are the alert route's sink names.
	Sinks []string
	// Fallback, when set, pages an alert whose workflow could not start.
	Fallback app.Pager
	Logger   *slog.Logger
}

var _ app.Pager = Temporal{}

// Page implements app.Pager. A start that finds the alert's workflow
// running joins it: the page is started.
func (p Temporal) Page(ctx context.Context, a domain.Alert) error {
	// The raise is committed: a caller that hangs up must not cancel its page.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	_, err := p.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        WorkflowID(a.ID),
		TaskQueue: p.TaskQueue,
	}, WorkflowName, Page{AlertID: a.ID, Sinks: p.Sinks, Message: Message(a)})
	if err == nil || temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		return nil
	}
	err = fmt.Errorf("start the page workflow %s: %w", WorkflowID(a.ID), err)
	if p.Fallback != nil {
		p.Logger.ErrorContext(ctx, "could not start the page workflow; paging through the log instead",
			"alert_id", a.ID, "workflow_id", WorkflowID(a.ID), "error", err)
		_ = p.Fallback.Page(ctx, a) // the log: it does not fail
	}
	return err
}

// Message is what the sinks deliver for alert a: its summary as the title,
// its details as indented JSON, keyed alert/<id> so receivers can drop a
// retried delivery that had in fact arrived.
func Message(a domain.Alert) sink.Message {
	body, err := json.MarshalIndent(a.Details, "", "  ")
	if err != nil || len(a.Details) == 0 {
		body = nil
	}
	return sink.Message{
		Kind:     sink.KindAlert,
		Title:    a.Summary,
		Body:     string(body),
		DedupKey: WorkflowID(a.ID),
		Time:     a.FirstSeenAt,
	}
}

// NewTemporal pages through the page workflow on service's task queue;
// fallback may be nil.
func NewTemporal(c client.Client, service string, sinks []sink.Sink, fallback app.Pager, logger *slog.Logger) Temporal {
	names := make([]string, len(sinks))
	for i, s := range sinks {
		names[i] = s.Name()
	}
	return Temporal{Client: c, TaskQueue: temporalx.TaskQueue(service), Sinks: names, Fallback: fallback, Logger: logger}
}
