package store_test

import (
	"testing"

	"github.com/jackc/pgerrcode"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/queue/internal/store"
)

func TestMigrationsAreReversible(t *testing.T) {
	t.Parallel()
	servicetest.AssertMigrationsReversible(t, store.Migrations)
}

// Each case uses its own session ids: the cases run concurrently on one
// database, and a live position is exclusive across transactions.
func TestSchemaRules(t *testing.T) {
	t.Parallel()
	const insert = `INSERT INTO enqueued_messages (session_id, position, origin, content) VALUES `
	const reorder = `SET CONSTRAINTS enqueued_messages_live_position DEFERRED;
		UPDATE enqueued_messages SET position = 2 WHERE session_id = 15 AND content = 'a';
		UPDATE enqueued_messages SET position = 1 WHERE session_id = 15 AND content = 'b';
		SET CONSTRAINTS enqueued_messages_live_position IMMEDIATE`
	servicetest.AssertStatements(t, []pgdb.MigrationSet{store.Migrations}, []servicetest.StatementCase{
		{Name: "a caller's message", SQL: insert + `(1, 1, 'caller', 'hello')`},
		{Name: "an automated notice", SQL: insert + `(2, 1, 'automated_pr_merged', 'the PR merged')`},
		{Name: "an origin nobody defined", SQL: insert + `(3, 1, 'someone', 'x')`, WantCode: pgerrcode.CheckViolation},
		{Name: "an empty content", SQL: insert + `(4, 1, 'caller', '')`, WantCode: pgerrcode.CheckViolation},
		{Name: "positions start at 1", SQL: insert + `(5, 0, 'caller', 'x')`, WantCode: pgerrcode.CheckViolation},
		{
			Name:     "a status outside the four",
			SQL:      `INSERT INTO enqueued_messages (session_id, position, origin, content, status) VALUES (6, 1, 'caller', 'x', 'queued')`,
			WantCode: pgerrcode.CheckViolation,
		},
		{
			Name:     "sent without sent_at",
			SQL:      `INSERT INTO enqueued_messages (session_id, position, origin, content, status) VALUES (7, 1, 'caller', 'x', 'sent')`,
			WantCode: pgerrcode.CheckViolation,
		},
		{
			Name:     "processing without claimed_at",
			Setup:    insert + `(8, 1, 'caller', 'x')`,
			SQL:      `UPDATE enqueued_messages SET status = 'processing' WHERE session_id = 8`,
			WantCode: pgerrcode.CheckViolation,
		},
		{Name: "two live messages on one position", Setup: insert + `(9, 1, 'caller', 'a')`, SQL: insert + `(9, 1, 'caller', 'b')`, WantCode: pgerrcode.ExclusionViolation},
		{Name: "positions are per session", Setup: insert + `(10, 1, 'caller', 'a')`, SQL: insert + `(13, 1, 'caller', 'b')`},
		{
			Name:  "a retired message frees its position",
			Setup: insert + `(11, 1, 'caller', 'a'); UPDATE enqueued_messages SET status = 'undelivered', undelivered_at = now(), undelivered_reason = 'archived' WHERE session_id = 11`,
			SQL:   insert + `(11, 1, 'caller', 'b')`,
		},
		{
			Name:  "one statement swaps positions",
			Setup: insert + `(12, 1, 'caller', 'a'), (12, 2, 'caller', 'b')`,
			SQL:   `UPDATE enqueued_messages SET position = 3 - position WHERE session_id = 12`,
		},
		{
			Name:     "one idempotency key twice in a session",
			Setup:    `INSERT INTO enqueued_messages (session_id, position, origin, content, idempotency_key) VALUES (16, 1, 'caller', 'a', 'k')`,
			SQL:      `INSERT INTO enqueued_messages (session_id, position, origin, content, idempotency_key) VALUES (16, 2, 'caller', 'b', 'k')`,
			WantCode: pgerrcode.UniqueViolation,
		},
		{
			Name:     "undelivered without saying why",
			Setup:    insert + `(19, 1, 'caller', 'a')`,
			SQL:      `UPDATE enqueued_messages SET status = 'undelivered', undelivered_at = now() WHERE session_id = 19`,
			WantCode: pgerrcode.CheckViolation,
		},
		{
			Name:     "a reason for a message still pending",
			SQL:      `INSERT INTO enqueued_messages (session_id, position, origin, content, undelivered_reason) VALUES (20, 1, 'caller', 'a', 'why')`,
			WantCode: pgerrcode.CheckViolation,
		},
		{
			Name:     "processing without a lease",
			Setup:    insert + `(21, 1, 'caller', 'x')`,
			SQL:      `UPDATE enqueued_messages SET status = 'processing', claimed_at = now() WHERE session_id = 21`,
			WantCode: pgerrcode.CheckViolation,
		},
		{
			Name: "two claims in one session",
			Setup: insert + `(22, 1, 'caller', 'a'), (22, 2, 'caller', 'b');
				UPDATE enqueued_messages SET status = 'processing', claimed_at = now(), lease_id = gen_random_uuid(),
				    lease_expires_at = now() WHERE session_id = 22 AND content = 'a'`,
			SQL: `UPDATE enqueued_messages SET status = 'processing', claimed_at = now(), lease_id = gen_random_uuid(),
				lease_expires_at = now() WHERE session_id = 22 AND content = 'b'`,
			WantCode: pgerrcode.UniqueViolation,
		},
		{Name: "content over the limit", SQL: insert + `(17, 1, 'caller', repeat('a', 500001))`, WantCode: pgerrcode.CheckViolation},
		{Name: "a seal without its holder", SQL: `INSERT INTO session_queues (session_id, sealed_at) VALUES (18, now())`, WantCode: pgerrcode.CheckViolation},
		{Name: "a reorder over several statements defers the check", Setup: insert + `(15, 1, 'caller', 'a'), (15, 2, 'caller', 'b')`, SQL: reorder},
		{
			Name:     "a reorder must not end with two on one position",
			Setup:    insert + `(14, 1, 'caller', 'a'), (14, 2, 'caller', 'b')`,
			SQL:      `SET CONSTRAINTS enqueued_messages_live_position DEFERRED; UPDATE enqueued_messages SET position = 1 WHERE session_id = 14; SET CONSTRAINTS enqueued_messages_live_position IMMEDIATE`,
			WantCode: pgerrcode.ExclusionViolation,
		},
	})
}
