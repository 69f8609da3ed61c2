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
	const insert = `INSERT INTO workspaces (session_id, path) VALUES `
	servicetest.AssertStatements(t, []pgdb.MigrationSet{store.Migrations}, []servicetest.StatementCase{
		{Name: "a new workspace", SQL: insert + `(1, '/work/1')`},
		{Name: "a relative path", SQL: insert + `(2, 'work/2')`, WantCode: pgerrcode.CheckViolation},
		{Name: "a state outside the five", SQL: `INSERT INTO workspaces (session_id, path, state) VALUES (3, '/work/3', 'deleted')`, WantCode: pgerrcode.CheckViolation},
		{Name: "a second workspace for a session", Setup: insert + `(4, '/work/4')`, SQL: insert + `(4, '/work/4b')`, WantCode: pgerrcode.UniqueViolation},
		{Name: "two sessions in one directory", Setup: insert + `(5, '/work/5')`, SQL: insert + `(6, '/work/5')`, WantCode: pgerrcode.UniqueViolation},
		{
			Name:     "a retained clone still holds its directory",
			Setup:    insert + `(7, '/work/7'); UPDATE workspaces SET state = 'retained' WHERE session_id = 7`,
			SQL:      insert + `(8, '/work/7')`,
			WantCode: pgerrcode.UniqueViolation,
		},
		{
			Name:  "a preserved clone frees its directory",
			Setup: insert + `(9, '/work/9'); UPDATE workspaces SET state = 'preserved' WHERE session_id = 9`,
			SQL:   insert + `(10, '/work/9')`,
		},
	})
}
