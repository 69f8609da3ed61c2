// Package inbox makes event consumers idempotent: a consumer claims an event
// id in the same transaction as the change the event causes, so a redelivered
// event is recognised and skipped.
package inbox

import (
	"context"
	"embed"
	"fmt"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the inbox table's migration set; every consuming service
// applies it.
var Migrations = pgdb.MigrationSet{Name: "inbox", FS: pgdb.MigrationsDir(migrations)}

// Claim records eventID as applied and reports whether this is its first
// delivery. Call it inside the transaction that applies the event; when it
// returns false, skip the event.
func Claim(ctx context.Context, db pgdb.DBTX, eventID, topic string) (bool, error) {
	tag, err := db.Exec(ctx,
		`INSERT INTO inbox_events (event_id, topic) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING`,
		eventID, topic)
	if err != nil {
		return false, fmt.Errorf("claim event %s: %w", eventID, err)
	}
	return tag.RowsAffected() == 1, nil
}
