package devstack

import (
	"bytes"
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

	pg, err := StartPostgres(ctx, PostgresOptions{DataDir: dir, Durability: Disposable})
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
	_, err = pg.CPU()
	require.NoError(t, err, "its postmaster is found for make test's CPU report")

	// A second start while it runs reuses the cluster and does not own it.
	reused, err := StartPostgres(ctx, PostgresOptions{DataDir: dir, Durability: Disposable})
	require.NoError(t, err)
	require.False(t, reused.Started())
	require.Equal(t, pg.AdminURL(), reused.AdminURL())

	// After a stop, the next start serves the same data on the stored port.
	require.NoError(t, pg.Stop())
	require.False(t, pg.Running(ctx))
	restarted, err := StartPostgres(ctx, PostgresOptions{DataDir: dir, Port: 1, Durability: Disposable})
	require.NoError(t, err)
	require.True(t, restarted.Started())
	require.Equal(t, pg.AdminURL(), restarted.AdminURL(), "Port only applies at first init")
	require.NoError(t, restarted.EnsureDatabase(ctx, "zimmer_probe"))
	require.NoError(t, restarted.Stop())
	require.NoError(t, restarted.Stop(), "stopping a stopped cluster is a no-op")
}

// showDurability answers SHOW for each durability setting, from SQL.
func showDurability(t *testing.T, pg *Postgres) [3]string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pg.AdminURL())
	require.NoError(t, err)
	defer conn.Close(t.Context())
	var got [3]string
	for i, name := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
		require.NoError(t, conn.QueryRow(t.Context(), "SHOW "+name).Scan(&got[i]))
	}
	return got
}

// make run's cluster holds real sessions: durable unless asked otherwise.
// Only make test's may turn fsync off.
func TestStartPostgresDurability(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts PostgresOptions
		want [3]string
	}{
		{"default is durable", PostgresOptions{}, [3]string{"on", "on", "on"}},
		{"durable", PostgresOptions{Durability: Durable}, [3]string{"on", "on", "on"}},
		{"disposable", PostgresOptions{Durability: Disposable}, [3]string{"off", "off", "off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := tempDataDir(t)
			t.Cleanup(func() { require.NoError(t, StopPostgresAt(dir)) })
			tc.opts.DataDir = dir
			pg, err := StartPostgres(t.Context(), tc.opts)
			require.NoError(t, err)
			require.Equal(t, tc.want, showDurability(t, pg), "fsync, synchronous_commit, full_page_writes")

			conf, err := os.ReadFile(filepath.Join(dir, "postgresql.conf"))
			require.NoError(t, err)
			require.NotRegexp(t, `(?m)^\s*(fsync|synchronous_commit|full_page_writes)\s*=`, string(conf),
				"durability comes with each start, not from the file")
		})
	}
}

// A .data/postgres made by an older zimmer-dev has fsync=off written in its
// postgresql.conf, and may still be running that way: a durable start fixes both.
func TestStartPostgresMakesLegacyClusterDurable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := tempDataDir(t)
	t.Cleanup(func() { require.NoError(t, StopPostgresAt(dir)) })
	confPath := filepath.Join(dir, "postgresql.conf")
	// What the old initdb step appended, verbatim.
	legacy := "\n# Added by zimmer devstack: private, loopback-only, disposable cluster.\n" +
		"fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
	appendLegacy := func() {
		f, err := os.OpenFile(confPath, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(legacy)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	requireConfClean := func() {
		conf, err := os.ReadFile(confPath)
		require.NoError(t, err)
		require.NotContains(t, string(conf), "fsync = off")
		require.NotContains(t, string(conf), "synchronous_commit = off")
		require.NotContains(t, string(conf), "full_page_writes = off")
		require.Contains(t, string(conf), "listen_addresses = '127.0.0.1'", "the rest of the file is kept")
	}

	// Running without durability, as the old make run left it.
	old, err := StartPostgres(ctx, PostgresOptions{DataDir: dir, Durability: Disposable})
	require.NoError(t, err)
	appendLegacy()
	require.Equal(t, [3]string{"off", "off", "off"}, showDurability(t, old))

	var progress bytes.Buffer
	reused, err := StartPostgres(ctx, PostgresOptions{DataDir: dir, Progress: &progress})
	require.NoError(t, err)
	require.Contains(t, progress.String(), "restarting it durable")
	require.False(t, reused.Started(), "a reused cluster stays owned by whoever started it")
	require.Equal(t, [3]string{"on", "on", "on"}, showDurability(t, reused))
	requireConfClean()

	// Stopped with the old file: the next start is durable too.
	require.NoError(t, reused.Stop())
	appendLegacy()
	restarted, err := StartPostgres(ctx, PostgresOptions{DataDir: dir})
	require.NoError(t, err)
	require.True(t, restarted.Started())
	require.Equal(t, [3]string{"on", "on", "on"}, showDurability(t, restarted))
	requireConfClean()

	// A disposable start of a durable running cluster leaves it alone.
	again, err := StartPostgres(ctx, PostgresOptions{DataDir: dir, Durability: Disposable})
	require.NoError(t, err)
	require.Equal(t, [3]string{"on", "on", "on"}, showDurability(t, again))
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
