// Package store keeps the queue's messages in Postgres: the schema and the
// Messages repository.
//
// # The archive protocol (proposed; the wiring comes later)
//
// A session lives in lifecycle's database and its queue in this one, so an
// archive cannot retire the queue in the archive's own commit. The seal on
// session_queues stands in for the shared commit:
//
//  1. Seal. Before lifecycle decides an archive, the archive's caller seals
//     the queue under a name for the attempt (Seal). From then on the queue
//     accepts nothing new (domain.ErrSealed) and delivers nothing, and the seal
//     waits for every claim in flight, so the messages Seal returns are
//     exactly those the archive would discard.
//  2. Guard. Over a non-empty queue without force, the caller unseals and
//     refuses with domain.ArchiveRefusal. Otherwise lifecycle commits the
//     archive, its line carrying domain.RetirementClause of those messages.
//  3. Retire. Only after the archive has committed are the messages moved to
//     undelivered (Retire), driven by lifecycle's archived event through the
//     inbox: so nothing is ever retired from a session that was not archived,
//     and a system archive, which never consults the guard and never seals,
//     retires just the same. Retire also seals, so a message enqueued between
//     such an archive's commit and its event is retired too, and none after.
//     The alert is decided by domain.AlertFor from what Retire returns.
//  4. Unseal. If the archive does not commit, the caller unseals its own seal
//     (Unseal is a no-op on anybody else's). A caller that dies between seal
//     and commit leaves a seal behind; a sweep unseals seals older than a
//     minute whose session lifecycle reports as not archived. Unarchive
//     unseals too; undelivered messages stay undelivered.
//
// So no message is accepted for an archived session and left pending: it
// was either live at the seal and retired, or refused by the seal.
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
