// Package alert pages an operator about Zimmer itself (not about a
// session): a side effect that keeps failing, an event no consumer will
// take. Every service raises alerts the same way, through notification's
// RaiseAlert, which deduplicates them by key within its window; without a
// notification service they are logged at error level instead.
package alert

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
)

// Raiser pages an operator, deduplicating by key.
type Raiser interface {
	RaiseAlert(ctx context.Context, dedupKey, summary string, details map[string]any) error
}

// Log "raises" an alert by logging it at error level: the fallback when no
// notification service is configured.
type Log struct{ Logger *slog.Logger }

// RaiseAlert implements Raiser.
func (l Log) RaiseAlert(ctx context.Context, key, summary string, details map[string]any) error {
	l.Logger.ErrorContext(ctx, summary, "alert", true, "dedup_key", key, "details", details)
	return nil
}

// Notification raises alerts through the notification context.
type Notification struct {
	Client notificationv1.NotificationServiceClient
}

// RaiseAlert implements Raiser.
func (n Notification) RaiseAlert(ctx context.Context, key, summary string, details map[string]any) error {
	d, err := structpb.NewStruct(details)
	if err != nil {
		return fmt.Errorf("encode alert details: %w", err)
	}
	_, err = n.Client.RaiseAlert(ctx, &notificationv1.RaiseAlertRequest{DedupKey: key, Summary: summary, Details: d})
	return err
}

// Raise raises an alert with a bounded wait, and logs it (with the reason)
// if it could not be raised: the caller is a background loop that must not
// stall on a sick notification service, and an unraised alert must still
// leave a trace.
func Raise(ctx context.Context, r Raiser, logger *slog.Logger, key, summary string, details map[string]any) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := r.RaiseAlert(ctx, key, summary, details); err != nil {
		logger.ErrorContext(ctx, "could not raise alert: "+summary, "dedup_key", key, "details", details, "alert_error", err)
	}
}
