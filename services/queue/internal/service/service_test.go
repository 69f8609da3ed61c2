package service_test

import (
	"testing"

	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/queue/internal/config"
	"github.com/zimmerhq/zimmer/services/queue/internal/service"
)

// unusedLifecycle is lifecycle's address for tests that never call it:
// the queue always dials lifecycle (lazily), and an empty address is
// refused at start like a malformed one.
const unusedLifecycle = "127.0.0.1:9"

// The component test: the real service on a fresh database, without
// Temporal, served on a free port and stopped by cancelling its context.
func TestServiceServesUntilCancelled(t *testing.T) {
	t.Parallel()
	svc := servicetest.New(t, service.New, config.Config{Config: servicetest.Config(t, service.MigrationSets...), LifecycleAddr: unusedLifecycle})
	servicetest.AssertServesUntilCancelled(t, svc.Host, "zimmer.queue.v1.QueueService", "enqueued_messages")
}

func TestServiceWorkerPollsItsTaskQueue(t *testing.T) {
	t.Parallel()
	temporalAddr := servicetest.TemporalAddress(t)
	cfg := servicetest.Config(t, service.MigrationSets...)
	cfg.TemporalAddress = temporalAddr
	servicetest.AssertWorkerPolls(t, servicetest.New(t, service.New, config.Config{Config: cfg, LifecycleAddr: unusedLifecycle}).Host, "queue")
}
