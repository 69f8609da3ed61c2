// Package store keeps the runner's own state in Postgres: its schema, the
// workspaces table behind workspace.Repository and the turns' transcripts
// (Transcripts).
package store

import (
	"embed"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the runner's own schema; its version table is
// runner_schema_migrations.
var Migrations = pgdb.MigrationSet{Name: "runner", FS: pgdb.MigrationsDir(migrations)}
