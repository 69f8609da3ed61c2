// Package store keeps notifications and alerts in Postgres.
package store

import (
	"embed"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the notification's own schema; its version table is
// notification_schema_migrations.
var Migrations = pgdb.MigrationSet{Name: "notification", FS: pgdb.MigrationsDir(migrations)}
