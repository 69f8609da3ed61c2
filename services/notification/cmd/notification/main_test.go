package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

func TestMigrateAppliesTheSchemaAndExits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t) // empty
	getenv := servicetest.Getenv(map[string]string{"NOTIFICATION_DATABASE_URL": url})

	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{"migrate"}, getenv, &out))
	require.NoError(t, run(ctx, []string{"migrate"}, getenv, io.Discard), "migrating a migrated database is a no-op")

	var line struct{ Service, Msg string }
	require.NoError(t, json.NewDecoder(&out).Decode(&line), "logs are JSON")
	require.Equal(t, "notification", line.Service)
	require.Equal(t, "database migrated", line.Msg)

	pool, err := pgdb.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	servicetest.AssertTables(t, pool, "notifications", "alerts", "inbox_events", "outbox_messages")
}

func TestUnknownArgumentsAreRefused(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), []string{"serve"}, servicetest.Getenv(nil), io.Discard)
	require.ErrorContains(t, err, "usage: notification [migrate]")
}
