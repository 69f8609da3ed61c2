package store_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgerrcode"

	"github.com/zimmerhq/zimmer/services/notification/internal/store"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
)

func TestMigrationsAreReversible(t *testing.T) {
	t.Parallel()
	servicetest.AssertMigrationsReversible(t, store.Migrations)
}

// Each case uses its own keys: the cases run concurrently on one database,
// and uniqueness and exclusion are enforced across transactions.
func TestSchemaRules(t *testing.T) {
	t.Parallel()
	const notify = `INSERT INTO notifications (session_id, type, title, marker, dedup_key) VALUES `
	servicetest.AssertStatements(t, []pgdb.MigrationSet{store.Migrations}, []servicetest.StatementCase{
		{Name: "a notification", SQL: notify + `(1, 'needs_input', 'Session 1 needs input', 1, NULL)`},
		{Name: "a type nobody defined", SQL: notify + `(2, 'digest', 'x', 0, NULL)`, WantCode: pgerrcode.CheckViolation},
		{Name: "an empty title", SQL: notify + `(3, 'agent_message', '', 0, NULL)`, WantCode: pgerrcode.CheckViolation},
		{Name: "a retried producer", Setup: notify + `(4, 'failure', 'Session 4 failed', 0, 'failure/e4')`, SQL: notify + `(4, 'failure', 'Session 4 failed', 0, 'failure/e4')`, WantCode: pgerrcode.UniqueViolation},
		{Name: "pushes without a key", Setup: notify + `(5, 'agent_message', 'hi', 0, NULL)`, SQL: notify + `(5, 'agent_message', 'hi', 0, NULL)`},
		{Name: "a second notification of one pause", Setup: notify + `(6, 'needs_input', 'Session 6 needs input', 2, NULL)`, SQL: notify + `(6, 'needs_input', 'again', 2, NULL)`, WantCode: pgerrcode.UniqueViolation},
		{Name: "the next pause", Setup: notify + `(7, 'needs_input', 'Session 7 needs input', 1, NULL)`, SQL: notify + `(7, 'needs_input', 'Session 7 needs input', 2, NULL)`},
		{Name: "a pause without its marker", SQL: notify + `(8, 'needs_input', 'Session 8 needs input', 0, NULL)`, WantCode: pgerrcode.CheckViolation},
		{Name: "a push about no session", SQL: notify + `(NULL, 'agent_message', 'backup done', 0, NULL)`},
		{Name: "a session id that is no id", SQL: notify + `(0, 'agent_message', 'hi', 0, NULL)`, WantCode: pgerrcode.CheckViolation},

		{Name: "an alert", SQL: `INSERT INTO alerts (dedup_key, summary, dedup_until) VALUES ('k1', 'boom', now() + interval '1 hour')`},
		{
			Name:     "a second alert inside the window",
			Setup:    alert("k2", "2030-01-01 10:00Z", "2030-01-01 11:00Z"),
			SQL:      alert("k2", "2030-01-01 10:30Z", "2030-01-01 11:30Z"),
			WantCode: pgerrcode.ExclusionViolation,
		},
		{
			Name:  "a repeat after the window pages again",
			Setup: alert("k3", "2030-01-01 10:00Z", "2030-01-01 11:00Z"),
			SQL:   alert("k3", "2030-01-01 11:00Z", "2030-01-01 12:00Z"),
		},
		{
			Name:  "other keys share a window",
			Setup: alert("k4", "2030-01-01 10:00Z", "2030-01-01 11:00Z"),
			SQL:   alert("k5", "2030-01-01 10:30Z", "2030-01-01 11:30Z"),
		},
		{
			Name:  "the store's insert absorbs a repeat",
			Setup: alert("k6", "2030-01-01 10:00Z", "2030-01-01 11:00Z"),
			SQL: alert("k6", "2030-01-01 10:30Z", "2030-01-01 11:30Z") + `
				ON CONFLICT ON CONSTRAINT alerts_one_open_per_key DO NOTHING`,
		},
		{Name: "a window that ends before it opens", SQL: alert("k7", "2030-01-01 10:00Z", "2030-01-01 09:59Z"), WantCode: pgerrcode.CheckViolation},
		{
			Name:     "seen last before seen first",
			SQL:      `INSERT INTO alerts (dedup_key, summary, first_seen_at, last_seen_at, dedup_until) VALUES ('k9', 'boom', now(), now() - interval '1 second', now() + interval '1 hour')`,
			WantCode: pgerrcode.CheckViolation,
		},
		{Name: "details that are not an object", SQL: `INSERT INTO alerts (dedup_key, summary, details, dedup_until) VALUES ('k8', 'boom', '[]', now() + interval '1 hour')`, WantCode: pgerrcode.CheckViolation},
	})
}

// alert is the SQL inserting an alert on key whose dedup window runs from
// from to until.
func alert(key, from, until string) string {
	return fmt.Sprintf(`INSERT INTO alerts (dedup_key, summary, first_seen_at, last_seen_at, dedup_until)
		VALUES ('%s', 'boom', '%s', '%s', '%s')`, key, from, from, until)
}
