package servicetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for golang-migrate
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
)

// AssertTables requires that every table in tables exists in db's current
// schema (information_schema.tables), naming the ones that do not.
func AssertTables(t testing.TB, db pgdb.DBTX, tables ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	missing, err := missingTables(ctx, db, tables)
	require.NoError(t, err, "look up tables")
	require.Empty(t, missing, "tables missing from the schema")
}

func missingTables(ctx context.Context, db pgdb.DBTX, tables []string) ([]string, error) {
	rows, err := db.Query(ctx, `
		SELECT want FROM unnest($1::text[]) AS want
		WHERE NOT EXISTS (
			SELECT 1 FROM information_schema.tables
			WHERE table_schema = current_schema() AND table_name = want)
		ORDER BY want`, tables)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// AssertMigrationsReversible applies set to an empty database, migrates it
// all the way down and up again. It requires that the down migrations leave
// nothing of the set behind but its version table, and that going up again
// rebuilds exactly the schema the first run built (tables, columns,
// constraints, indexes, sequences, types, functions and triggers).
func AssertMigrationsReversible(t testing.TB, set pgdb.MigrationSet) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	url := pgtest.NewDatabase(t) // no sets: an empty database
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })

	empty := schemaOf(t, conn)
	require.NoError(t, pgdb.Migrate(ctx, url, set), "migrate %s up", set.Name)
	up := schemaOf(t, conn)
	require.NotEqual(t, empty, up, "migrations of %s create nothing", set.Name)

	require.NoError(t, migrateDown(url, set), "migrate %s down", set.Name)
	require.Equal(t, empty, schemaOf(t, conn), "what the down migrations of %s leave behind", set.Name)

	require.NoError(t, pgdb.Migrate(ctx, url, set), "migrate %s up again", set.Name)
	require.Equal(t, up, schemaOf(t, conn), "the schema %s rebuilds after going down", set.Name)
}

// migrateDown reverts every migration of set. It mirrors pgdb.Migrate's
// setup (one version table per set), which offers no way down.
func migrateDown(url string, set pgdb.MigrationSet) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	driver, err := migratepgx.WithInstance(db, &migratepgx.Config{MigrationsTable: set.Name + "_schema_migrations"})
	if err != nil {
		_ = db.Close()
		return err
	}
	src, err := iofs.New(set.FS, ".")
	if err != nil {
		_ = db.Close()
		return err
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx", driver)
	if err != nil {
		_ = db.Close()
		return err
	}
	defer m.Close() // closes db
	if err := m.Down(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return err
	}
	return nil
}

// schemaOf describes the current schema, one sorted line per object, leaving
// out the migration version tables.
func schemaOf(t testing.TB, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
		WITH rel AS (
			SELECT c.oid, c.relname, c.relkind FROM pg_class c
			WHERE c.relnamespace = current_schema()::regnamespace
			  AND c.relname NOT LIKE '%schema\_migrations%')
		SELECT format('relation %s %s', relkind, relname) FROM rel
		UNION ALL
		SELECT format('column %s.%s %s not_null=%s default=%s', rel.relname, a.attname,
		              format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid))
		FROM rel JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum > 0 AND NOT a.attisdropped
		LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE rel.relkind IN ('r', 'p', 'v', 'm', 'f')
		UNION ALL
		SELECT format('constraint %s.%s %s', rel.relname, con.conname, pg_get_constraintdef(con.oid))
		FROM rel JOIN pg_constraint con ON con.conrelid = rel.oid
		UNION ALL
		SELECT format('index %s', pg_get_indexdef(i.indexrelid))
		FROM rel JOIN pg_index i ON i.indexrelid = rel.oid
		UNION ALL
		SELECT format('trigger %s.%s', rel.relname, tg.tgname)
		FROM rel JOIN pg_trigger tg ON tg.tgrelid = rel.oid AND NOT tg.tgisinternal
		UNION ALL
		SELECT format('type %s %s', typtype, typname) FROM pg_type
		WHERE typnamespace = current_schema()::regnamespace AND typtype IN ('e', 'd')
		UNION ALL
		SELECT format('function %s', oid::regprocedure) FROM pg_proc
		WHERE pronamespace = current_schema()::regnamespace
		ORDER BY 1`)
	require.NoError(t, err, "describe schema")
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err, "describe schema")
	return lines
}

// StatementCase is SQL run against a migrated schema and the outcome the
// schema must give it: success, or the SQLSTATE of the rule that rejects it.
type StatementCase struct {
	Name string
	// Setup runs first and must succeed; it may hold several statements.
	Setup string
	// SQL is what the case is about; it may hold several statements.
	SQL string
	// WantCode is "" when SQL must succeed, else the SQLSTATE it must fail
	// with (see github.com/jackc/pgerrcode), e.g. pgerrcode.CheckViolation.
	WantCode string
}

// AssertStatements runs each case as a parallel subtest in its own
// transaction on a database migrated with sets (pgtest.Tx), rolled back when
// the subtest ends: the table-driven way to pin a schema's constraints.
func AssertStatements(t *testing.T, sets []pgdb.MigrationSet, cases []StatementCase) {
	t.Helper()
	// Skip (or fail) once, here: pgtest.Tx skips while holding its lock, so
	// parallel subtests skipping there would wait on each other forever.
	pgtest.AdminURL(t)
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), Timeout)
			defer cancel()
			tx := pgtest.Tx(t, sets...)
			if tc.Setup != "" {
				_, err := tx.Exec(ctx, tc.Setup)
				require.NoError(t, err, "setup")
			}
			_, err := tx.Exec(ctx, tc.SQL)
			require.Equal(t, tc.WantCode, pgdb.Code(err), "SQLSTATE of %s (error: %v)", describe(tc.WantCode), err)
		})
	}
}

func describe(code string) string {
	if code == "" {
		return "a statement that must succeed"
	}
	return fmt.Sprintf("a statement that must fail with %s", code)
}

// AssertMigrates runs a service binary's `migrate` subcommand against an
// empty database (named by <SERVICE>_DATABASE_URL) and checks that it
// created tables; proof that the binary is wired to the right schema.
func AssertMigrates(t *testing.T, run func(context.Context, []string, func(string) string, io.Writer) error, service string, tables ...string) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	getenv := Getenv(map[string]string{strings.ToUpper(service) + "_DATABASE_URL": url})
	require.NoError(t, run(t.Context(), []string{"migrate"}, getenv, io.Discard))
	pool, err := pgdb.Open(t.Context(), url)
	require.NoError(t, err)
	defer pool.Close()
	AssertTables(t, pool, append(tables, "inbox_events", "outbox_messages")...)
}
