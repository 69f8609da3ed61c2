package devstack

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// testPostgres is the shared test server (ZIMMER_TEST_DATABASE_URL, as make
// test and CI provide), or else a disposable private cluster.
func testPostgres(t *testing.T) *Postgres {
	t.Helper()
	if url := os.Getenv("ZIMMER_TEST_DATABASE_URL"); url != "" {
		pg, err := ConnectPostgres(t.Context(), url)
		require.NoError(t, err)
		return pg
	}
	dir := tempDataDir(t)
	t.Cleanup(func() { require.NoError(t, StopPostgresAt(dir)) })
	pg, err := StartPostgres(t.Context(), PostgresOptions{DataDir: dir, Durability: Disposable})
	require.NoError(t, err)
	return pg
}

// freshDatabase creates an empty database dropped when the test ends.
func freshDatabase(t *testing.T, pg *Postgres) string {
	t.Helper()
	name := fmt.Sprintf("devstack_dl_%d", time.Now().UnixNano())
	require.NoError(t, pg.EnsureDatabase(t.Context(), name))
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), pg.AdminURL())
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			_ = conn.Close(context.Background())
		}
	})
	return pg.DatabaseURL(name)
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	pg := testPostgres(t)
	ctx := t.Context()
	exec := func(url, sql string) {
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		require.NoError(t, err)
	}

	noOutbox := freshDatabase(t, pg)
	n, err := DeadLetters(ctx, noOutbox)
	require.NoError(t, err)
	require.Zero(t, n, "no outbox table yet: none")

	olderOutbox := freshDatabase(t, pg)
	exec(olderOutbox, "CREATE TABLE outbox_messages (id bigserial PRIMARY KEY, last_error text)")
	n, err = DeadLetters(ctx, olderOutbox)
	require.NoError(t, err)
	require.Zero(t, n, "an outbox without dead_at: none")

	withDead := freshDatabase(t, pg)
	exec(withDead, `CREATE TABLE outbox_messages (id bigserial PRIMARY KEY, last_error text, dead_at timestamptz);
		INSERT INTO outbox_messages (last_error, dead_at) VALUES ('bad', now()), ('worse', now()), (NULL, NULL)`)
	n, err = DeadLetters(ctx, withDead)
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "only rows with dead_at count")

	_, err = DeadLetters(ctx, pg.DatabaseURL("devstack_no_such_database"))
	require.Error(t, err, "an unreachable database is an error, not zero")
}
