package devstack

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// tempDataDir returns a not-yet-existing cluster directory under t.TempDir.
// The temp dirs are made traversable because, as root, the server runs as
// the postgres user.
func tempDataDir(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	return filepath.Join(dir, "pg")
}

func TestStartPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := tempDataDir(t)
	t.Cleanup(func() { require.NoError(t, StopPostgresAt(dir)) })

	pg, err := StartPostgres(ctx, PostgresOptions{DataDir: dir})
	require.NoError(t, err)
	require.True(t, pg.Started())
	require.Equal(t, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pg.Port()), pg.AdminURL())
	require.FileExists(t, filepath.Join(dir, fmt.Sprintf(".s.PGSQL.%d", pg.Port())), "unix socket lives in the data dir")

	require.NoError(t, pg.EnsureDatabase(ctx, "zimmer_probe"))
	require.NoError(t, pg.EnsureDatabase(ctx, "zimmer_probe"), "EnsureDatabase is idempotent")
	conn, err := pgx.Connect(ctx, pg.DatabaseURL("zimmer_probe"))
	require.NoError(t, err)
	var db, fsync string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_database(), current_setting('fsync')").Scan(&db, &fsync))
	require.NoError(t, conn.Close(ctx))
	require.Equal(t, "zimmer_probe", db)
	require.Equal(t, "off", fsync)

	// A second start while it runs reuses the cluster and does not own it.
	reused, err := StartPostgres(ctx, PostgresOptions{DataDir: dir})
	require.NoError(t, err)
	require.False(t, reused.Started())
	require.Equal(t, pg.AdminURL(), reused.AdminURL())

	// After a stop, the next start serves the same data on the stored port.
	require.NoError(t, pg.Stop())
	require.False(t, pg.Running(ctx))
	restarted, err := StartPostgres(ctx, PostgresOptions{DataDir: dir, Port: 1})
	require.NoError(t, err)
	require.True(t, restarted.Started())
	require.Equal(t, pg.AdminURL(), restarted.AdminURL(), "Port only applies at first init")
	require.NoError(t, restarted.EnsureDatabase(ctx, "zimmer_probe"))
	require.NoError(t, restarted.Stop())
	require.NoError(t, restarted.Stop(), "stopping a stopped cluster is a no-op")
}

func TestConnectPostgres(t *testing.T) {
	t.Parallel()
	_, err := ConnectPostgres(t.Context(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", unusedPort(t)))
	require.Error(t, err)

	pg := &Postgres{adminURL: "postgres://u:p@db.example:5432/postgres?sslmode=require"}
	require.Equal(t, "postgres://u:p@db.example:5432/zimmer_queue?sslmode=require", pg.DatabaseURL("zimmer_queue"))
	require.NoError(t, pg.Stop(), "Stop never touches an external server")
}

func unusedPort(t *testing.T) int {
	p, err := FreePort()
	require.NoError(t, err)
	return p
}
