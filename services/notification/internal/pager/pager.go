// Package pager delivers pages for opened operational alerts.
package pager

import (
	"context"
	"log/slog"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
)

// Log pages by logging the alert at ERROR with alert=true, which is what
// operators watch for today. The real sinks (Slack #eng-alerts, ntfy, a
// webhook) come with the notification issue and will sit beside or replace
// this one behind app.Pager.
type Log struct{ Logger *slog.Logger }

var _ app.Pager = Log{}

// Page implements app.Pager.
func (p Log) Page(ctx context.Context, a domain.Alert) {
	p.Logger.ErrorContext(ctx, "operational alert: "+a.Summary,
		"alert", true,
		"alert_id", a.ID,
		"dedup_key", a.DedupKey,
		"summary", a.Summary,
		"details", a.Details,
		"dedup_until", a.DedupUntil,
	)
}
