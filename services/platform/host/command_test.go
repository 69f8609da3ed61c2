package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/host"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

type fakeService struct{ ran, closed bool }

func (f *fakeService) Run(context.Context) error { f.ran = true; return nil }
func (f *fakeService) Close()                    { f.closed = true }

func command(svc *fakeService) host.Command[host.Config] {
	return host.Command[host.Config]{
		Name: "demo",
		Load: func(ctx context.Context, getenv func(string) string) (host.Config, error) {
			return host.LoadConfig(ctx, getenv, "demo", 9999)
		},
		Migrations: []pgdb.MigrationSet{inbox.Migrations},
		New: func(context.Context, host.Config, *slog.Logger) (host.Service, error) {
			return svc, nil
		},
	}
}

func TestMigrateAppliesTheSchemaAndExits(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t) // empty
	getenv := servicetest.Getenv(map[string]string{"DEMO_DATABASE_URL": url})
	svc := &fakeService{}

	var out bytes.Buffer
	require.NoError(t, command(svc).Run(t.Context(), []string{"migrate"}, getenv, &out))
	require.NoError(t, command(svc).Run(t.Context(), []string{"migrate"}, getenv, io.Discard), "a second migrate is a no-op")
	require.False(t, svc.ran, "migrate does not serve")

	var line struct{ Service, Msg string }
	require.NoError(t, json.NewDecoder(&out).Decode(&line), "logs are JSON")
	require.Equal(t, "demo", line.Service)
	require.Equal(t, "database migrated", line.Msg)

	pool, err := pgdb.Open(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	servicetest.AssertTables(t, pool, "inbox_events")
}

func TestServeRunsAndClosesTheService(t *testing.T) {
	t.Parallel()
	svc := &fakeService{}
	require.NoError(t, command(svc).Run(t.Context(), nil, servicetest.Getenv(nil), io.Discard))
	require.True(t, svc.ran)
	require.True(t, svc.closed)
}

func TestBadArgumentsAndConfigAreRefused(t *testing.T) {
	t.Parallel()
	err := command(&fakeService{}).Run(t.Context(), []string{"serve"}, servicetest.Getenv(nil), io.Discard)
	require.ErrorContains(t, err, "usage: demo [migrate]")
	err = command(&fakeService{}).Run(t.Context(), nil, servicetest.Getenv(map[string]string{"DEMO_LOG_LEVEL": "loud"}), io.Discard)
	require.ErrorContains(t, err, "want debug, info, warn or error")
	err = command(&fakeService{}).Run(t.Context(), nil, servicetest.Getenv(map[string]string{"DEMO_GRPC_ADDR": "nope"}), io.Discard)
	require.ErrorContains(t, err, "want host:port")
}
