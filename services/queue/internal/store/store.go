// Package store keeps the queue's messages in Postgres. For now it holds the
// schema; repositories arrive with the queue's use cases.
package store

import (
	"embed"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the queue's own schema; its version table is
// queue_schema_migrations.
var Migrations = pgdb.MigrationSet{Name: "queue", FS: pgdb.MigrationsDir(migrations)}
