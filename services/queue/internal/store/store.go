// Package store keeps the queue's messages in Postgres: the schema and the
// Messages repository.
//
// Two mechanisms carry the queue's promises across a database it does not
// share (docs/contexts/queue.md, QU-5 and QU-12, says the whole protocol):
//
//   - Deliver claims a message under a lease (committed: status
//     processing, one per session), calls lifecycle's DeliverTurn (applied
//     once per delivery id) with no transaction, row lock or connection
//     held, then settles the claim: sent, or pending again. A failed send
//     leaves the message pending, a retried one never runs twice, and a
//     holder that dies leaves a claim that expires. The session's interrupt
//     lease (LockForInterrupt) is a committed lease the same way.
//   - The seal on session_queues stands in for the archive's commit: Seal
//     (named by the archive attempt) closes the queue and returns what the
//     archive would discard, Unseal undoes an attempt that did not commit,
//     Retire (only on the committed archive's effect) moves the live
//     messages to undelivered and seals as RetiredSeal, and Reopen (on
//     unarchive) lifts it. So no message is accepted for an archived session
//     and left pending: it was live at the seal and is retired, or refused
//     by the seal.
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
