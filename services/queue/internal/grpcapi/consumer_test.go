package grpcapi_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	"github.com/zimmerhq/zimmer/services/lifecycle/effect/effecttest"
	"github.com/zimmerhq/zimmer/services/queue/internal/app"
	"github.com/zimmerhq/zimmer/services/queue/internal/grpcapi"
)

// TestTheQueueCarriesOutEveryEffectItReceives lists the effects lifecycle
// addresses to the queue (domain.OwnerQueue): each is carried out, none
// only acknowledged (issue 28).
func TestTheQueueCarriesOutEveryEffectItReceives(t *testing.T) {
	t.Parallel()
	handled := effecttest.Handled(t, func(ctx context.Context, logger *slog.Logger, ev *lifecyclev1.SessionEvent) {
		_, _ = grpcapi.NewConsumer(app.Queue{}, logger).ConsumeSessionEvent(ctx, &lifecyclev1.ConsumeSessionEventRequest{Event: ev})
	})
	require.ElementsMatch(t, []string{
		"drain_enqueued_messages_after_pause",
		"retire_enqueued_messages",
		"reopen_enqueued_messages",
	}, handled)
}
