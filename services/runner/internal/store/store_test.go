package store_test

import (
	"testing"

	"github.com/jackc/pgerrcode"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/runner/internal/store"
)

func TestMigrationsAreReversible(t *testing.T) {
	t.Parallel()
	servicetest.AssertMigrationsReversible(t, store.Migrations)
}

// Each case uses its own sessions and paths: the cases run concurrently on
// one database, and uniqueness is enforced across transactions.
func TestSchemaRules(t *testing.T) {
	t.Parallel()
	const insert = `INSERT INTO workspaces (session_id, node, path) VALUES `
	servicetest.AssertStatements(t, []pgdb.MigrationSet{store.Migrations}, []servicetest.StatementCase{
		{Name: "a new workspace", SQL: insert + `(1, 'a', '/work/1')`},
		{Name: "a relative path", SQL: insert + `(2, 'a', 'work/2')`, WantCode: pgerrcode.CheckViolation},
		{Name: "a state outside the six", SQL: `INSERT INTO workspaces (session_id, node, path, state) VALUES (3, 'a', '/work/3', 'deleted')`, WantCode: pgerrcode.CheckViolation},
		{Name: "a second workspace for a session", Setup: insert + `(4, 'a', '/work/4')`, SQL: insert + `(4, 'a', '/work/4b')`, WantCode: pgerrcode.UniqueViolation},
		{Name: "two sessions in one directory", Setup: insert + `(5, 'a', '/work/5')`, SQL: insert + `(6, 'a', '/work/5')`, WantCode: pgerrcode.UniqueViolation},
		{
			Name:     "a retained clone still holds its directory",
			Setup:    insert + `(7, 'a', '/work/7'); UPDATE workspaces SET state = 'retained', trash_after = now() WHERE session_id = 7`,
			SQL:      insert + `(8, 'a', '/work/7')`,
			WantCode: pgerrcode.UniqueViolation,
		},
		{
			Name:  "a preserved clone frees its directory",
			Setup: insert + `(9, 'a', '/work/9'); UPDATE workspaces SET state = 'preserved', trash_after = now(), artifacts_dir = '/p/9' WHERE session_id = 9`,
			SQL:   insert + `(10, 'a', '/work/9')`,
		},
		{
			Name:  "a failed clone frees its directory",
			Setup: insert + `(11, 'a', '/work/11'); UPDATE workspaces SET state = 'failed', failure_reason = 'no repo' WHERE session_id = 11`,
			SQL:   insert + `(12, 'a', '/work/11')`,
		},
		{Name: "one path on two nodes", Setup: insert + `(13, 'a', '/work/13')`, SQL: insert + `(14, 'b', '/work/13')`},
		{Name: "a workspace on no node", SQL: `INSERT INTO workspaces (session_id, path) VALUES (15, '/work/15')`, WantCode: pgerrcode.NotNullViolation},
		{Name: "a workspace on an unnamed node", SQL: insert + `(16, '', '/work/16')`, WantCode: pgerrcode.CheckViolation},
		{
			Name:     "a failure without a reason",
			SQL:      `INSERT INTO workspaces (session_id, node, path, state) VALUES (17, 'a', '/work/17', 'failed')`,
			WantCode: pgerrcode.CheckViolation,
		},
		{
			Name:     "a reason without a failure",
			SQL:      `INSERT INTO workspaces (session_id, node, path, failure_reason) VALUES (18, 'a', '/work/18', 'no repo')`,
			WantCode: pgerrcode.CheckViolation,
		},
		{
			Name: "a SHA-1 and a SHA-256 base commit",
			SQL: `INSERT INTO workspaces (session_id, node, path, base_commit) VALUES
				(19, 'a', '/work/19', '` + sha1 + `'), (20, 'a', '/work/20', '` + sha1 + sha1[:24] + `')`,
		},
		{
			Name:     "a retained clone without its trash deadline",
			SQL:      `INSERT INTO workspaces (session_id, node, path, state) VALUES (22, 'a', '/work/22', 'retained')`,
			WantCode: pgerrcode.CheckViolation,
		},
		{
			Name:     "a preserved clone without its artifacts",
			SQL:      `INSERT INTO workspaces (session_id, node, path, state, trash_after) VALUES (23, 'a', '/work/23', 'preserved', now())`,
			WantCode: pgerrcode.CheckViolation,
		},
		{
			Name:     "artifacts at a relative path",
			SQL:      `INSERT INTO workspaces (session_id, node, path, artifacts_dir) VALUES (24, 'a', '/work/24', 'p/24')`,
			WantCode: pgerrcode.CheckViolation,
		},
		{
			Name:     "a base commit that is no object id",
			SQL:      `INSERT INTO workspaces (session_id, node, path, base_commit) VALUES (21, 'a', '/work/21', 'HEAD')`,
			WantCode: pgerrcode.CheckViolation,
		},
	})
}

const sha1 = "0123456789abcdef0123456789abcdef01234567"
