package grpcapi_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect/effecttest"
	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/grpcapi"
)

// TestNotificationCarriesOutEveryEffectItReceives lists the effects
// lifecycle addresses to notification (domain.OwnerNotification): each is
// carried out, none only acknowledged (issue 28).
func TestNotificationCarriesOutEveryEffectItReceives(t *testing.T) {
	t.Parallel()
	handled := effecttest.Handled(t, func(ctx context.Context, logger *slog.Logger, ev *lifecyclev1.SessionEvent) {
		_, _ = grpcapi.NewConsumer(app.Notifications{}, logger).ConsumeSessionEvent(ctx, &lifecyclev1.ConsumeSessionEventRequest{Event: ev})
	})
	require.ElementsMatch(t, []string{
		"enqueue_debounced_needs_input_push_notification",
		"enqueue_failure_push_notification",
		"mark_notifications_stale",
		"dismiss_notifications",
	}, handled)
}
