package main

import (
	"testing"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

func TestMigrateCreatesTheSchema(t *testing.T) {
	t.Parallel()
	servicetest.AssertMigrates(t, command.Run, service.Name, "sessions")
}
