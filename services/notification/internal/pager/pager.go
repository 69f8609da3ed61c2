// Package pager delivers pages for opened operational alerts: Temporal
// starts a workflow per page (alert/<id>) that delivers to every sink of the
// alert route (ZIMMER_ALERT_SINKS), each retried with backoff; Log is the
// page without Temporal, and the raise's fallback when a workflow cannot
// start (the re-drive starts it later).
//
// The delivery itself (DeliverToSinks, Deliverer, RetryPolicy: one activity
// per sink, a permanent refusal not retried) is shared with the pushes of
// package push, so alerts and pushes reach their sinks by one rule.
package pager

import (
	"context"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
)

// Log pages by logging the alert at ERROR with alert=true, which is what
// operators watch for: the page when the service runs without Temporal, and
// Temporal's fallback when it cannot start a page workflow.
type Log struct{ Logger *slog.Logger }

var _ app.Pager = Log{}

// Page implements app.Pager: the log line is the page, so it never fails.
func (p Log) Page(ctx context.Context, a domain.Alert) error {
	p.Logger.ErrorContext(ctx, "operational alert: "+a.Summary,
		"alert", true,
		"alert_id", a.ID,
		"dedup_key", a.DedupKey,
		"summary", a.Summary,
		"details", a.Details,
		"dedup_until", a.DedupUntil,
	)
	return nil
}
