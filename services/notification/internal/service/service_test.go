package service_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/notification/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

// The component test: the real service on a fresh database, without
// Temporal, served on a free port and stopped by cancelling its context.
func TestServiceServesUntilCancelled(t *testing.T) {
	t.Parallel()
	svc := servicetest.New(t, service.New, servicetest.Config(t, service.MigrationSets...))
	require.Nil(t, svc.Temporal, "no Temporal address, no worker")

	stop := servicetest.RunInBackground(t, svc.Run)
	servicetest.AssertServing(t, svc.Addr(), "zimmer.notification.v1.NotificationService")
	servicetest.AssertTables(t, svc.Pool, "notifications", "alerts", "inbox_events", "outbox_messages")
	stop()
	servicetest.AssertStopped(t, svc.Addr())
}

func TestServiceWorkerPollsItsTaskQueue(t *testing.T) {
	t.Parallel()
	temporalAddr := servicetest.TemporalAddress(t)
	cfg := servicetest.Config(t, service.MigrationSets...)
	cfg.TemporalAddress = temporalAddr
	svc := servicetest.New(t, service.New, cfg)

	servicetest.RunInBackground(t, svc.Run)
	servicetest.AssertWorkerAnswers(t, svc.Temporal, "notification")
}
