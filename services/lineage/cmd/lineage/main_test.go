package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

func TestRunMigrate(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t) // empty: migrate must create everything
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"migrate"}, servicetest.Getenv(map[string]string{"LINEAGE_DATABASE_URL": url}), &out))
	require.Contains(t, out.String(), "migrations applied")

	pool, err := pgdb.Open(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	servicetest.AssertTables(t, pool, "session_nodes", "inbox_events", "outbox_messages")
}

func TestRunRefusesUnknownArguments(t *testing.T) {
	t.Parallel()
	err := run(t.Context(), []string{"serve"}, servicetest.Getenv(nil), &bytes.Buffer{})
	require.ErrorContains(t, err, "want none (serve) or migrate")
}
