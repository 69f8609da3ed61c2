package main

import (
	"testing"

	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/queue/internal/service"
)

func TestMigrateCreatesTheSchema(t *testing.T) {
	t.Parallel()
	servicetest.AssertMigrates(t, command.Run, service.Name, "enqueued_messages")
}
