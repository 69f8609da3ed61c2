package pgdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// MigrationSet is one owner's migrations (NNNN_name.up.sql / .down.sql at the
// root of FS). Each set keeps its own version table, <Name>_schema_migrations,
// so platform tables (outbox, inbox) and a service's tables evolve
// independently in one database.
type MigrationSet struct {
	Name string
	FS   fs.FS
}

// Migrate applies every set, in order, up to its latest version. Concurrent
// callers serialize on golang-migrate's advisory lock.
func Migrate(_ context.Context, url string, sets ...MigrationSet) error {
	for _, set := range sets {
		if err := migrateSet(url, set); err != nil {
			return err
		}
	}
	return nil
}

// migrateSet opens its own handle: closing a golang-migrate instance closes
// the database it was given.
func migrateSet(url string, set MigrationSet) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return fmt.Errorf("migrate %s: open database: %w", set.Name, err)
	}
	driver, err := migratepgx.WithInstance(db, &migratepgx.Config{MigrationsTable: set.Name + "_schema_migrations"})
	if err != nil {
		return fmt.Errorf("migrate %s: %w", set.Name, err)
	}
	src, err := iofs.New(set.FS, ".")
	if err != nil {
		return fmt.Errorf("migrate %s: read migrations: %w", set.Name, err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx", driver)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", set.Name, err)
	}
	defer m.Close()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate %s: %w", set.Name, err)
	}
	return nil
}
