package main

import (
	"testing"

	"github.com/zimmerhq/zimmer/services/lineage/internal/service"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

func TestMigrateCreatesTheSchema(t *testing.T) {
	t.Parallel()
	servicetest.AssertMigrates(t, command.Run, service.Name, "session_nodes")
}
