package store

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/platform/pgtest"
)

func TestRosterSeeded(t *testing.T) {
	t.Parallel()
	repo := NewProvenance(pgtest.DB(t, testSets...))

	users, err := repo.ListUsers(t.Context())
	require.NoError(t, err)
	require.Len(t, users, 2)
	for i, want := range []struct{ key, name string }{{"juliehazz", "Julie"}, {"tadasant", "Tadas"}} {
		require.Equal(t, want.key, users[i].Key)
		require.Equal(t, want.name, users[i].DisplayName)
		require.Empty(t, users[i].Email, "the spec's addresses are redacted; a deployment fills them in")
		require.Empty(t, users[i].SlackUserIDs, "Slack IDs are deployment configuration")
		require.Empty(t, users[i].Notes)
	}
	admin, ok := domain.NewRoster(users).Admin("")
	require.True(t, ok)
	require.Equal(t, "tadasant", admin.Key)
}

func TestUsersCreateUpdateAndSlackCollision(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.DB(t, testSets...)
	repo := NewProvenance(pool)

	ids := []string{"U1", "U2"}
	tadas, err := repo.UpdateUser(ctx, "tadasant", domain.UserPatch{SlackUserIDs: &ids, Notes: strp("final say")}.Apply)
	require.NoError(t, err)
	require.Equal(t, []string{"U1", "U2"}, tadas.SlackUserIDs)
	require.Equal(t, "final say", tadas.Notes)

	// Another user cannot take one of them, on create or on update.
	_, err = repo.CreateUser(ctx, domain.User{Key: "sam", DisplayName: "Sam", SlackUserIDs: []string{"U3", "U2"}})
	var taken *domain.SlackIDTakenError
	require.ErrorAs(t, err, &taken)
	require.Equal(t, domain.SlackIDTakenError{SlackUserID: "U2", Owner: "tadasant", Claimant: "sam"}, *taken, "both users named")
	require.ErrorIs(t, err, domain.ErrConflict)

	_, err = repo.UpdateUser(ctx, "juliehazz", domain.UserPatch{SlackUserIDs: &[]string{"U1"}}.Apply)
	require.ErrorAs(t, err, &taken)
	require.Equal(t, "tadasant", taken.Owner)

	// The refused create wrote nothing.
	users, err := repo.ListUsers(ctx)
	require.NoError(t, err)
	require.Len(t, users, 2)

	// The database enforces it too, whoever writes.
	_, err = pool.Exec(ctx, `INSERT INTO user_slack_ids (slack_user_id, user_key) VALUES ('U1', 'juliehazz')`)
	require.Equal(t, pgdb.CodeUniqueViolation, pgdb.Code(err))

	// Moving an ID: free it first, then claim it.
	_, err = repo.UpdateUser(ctx, "tadasant", domain.UserPatch{SlackUserIDs: &[]string{"U2"}}.Apply)
	require.NoError(t, err)
	julie, err := repo.UpdateUser(ctx, "juliehazz", domain.UserPatch{SlackUserIDs: &[]string{"U1"}, Email: strp("julie@example.com")}.Apply)
	require.NoError(t, err)
	require.Equal(t, []string{"U1"}, julie.SlackUserIDs)
	require.Equal(t, "julie@example.com", julie.Email)

	sam, err := repo.CreateUser(ctx, domain.User{Key: "sam", DisplayName: "Sam", SlackUserIDs: []string{"U3"}})
	require.NoError(t, err)
	require.Equal(t, []string{"U3"}, sam.SlackUserIDs)
	_, err = repo.CreateUser(ctx, domain.User{Key: "sam", DisplayName: "Other"})
	require.ErrorIs(t, err, domain.ErrAlreadyExists)

	// The key never changes, whatever the edit does.
	got, err := repo.UpdateUser(ctx, "sam", func(u *domain.User) error { u.Key = "renamed"; return nil })
	require.NoError(t, err)
	require.Equal(t, "sam", got.Key)
	_, err = repo.UpdateUser(ctx, "nobody", func(*domain.User) error { return nil })
	require.ErrorIs(t, err, domain.ErrNotFound)
}

// One email address belongs to one user, compared ignoring case: the store
// names the holder, and the database refuses it whoever writes.
func TestUserEmailUniqueIgnoringCase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.DB(t, testSets...)
	repo := NewProvenance(pool)

	_, err := repo.UpdateUser(ctx, "juliehazz", domain.UserPatch{Email: strp("julie@example.com")}.Apply)
	require.NoError(t, err)

	var taken *domain.EmailTakenError
	_, err = repo.CreateUser(ctx, domain.User{Key: "sam", DisplayName: "Sam", Email: "JULIE@example.com"})
	require.ErrorAs(t, err, &taken)
	require.Equal(t, domain.EmailTakenError{Email: "JULIE@example.com", Owner: "juliehazz"}, *taken)
	require.ErrorIs(t, err, domain.ErrConflict)
	_, err = repo.UpdateUser(ctx, "tadasant", func(u *domain.User) error { u.Email = "Julie@Example.COM"; return nil })
	require.ErrorAs(t, err, &taken)
	require.Equal(t, "juliehazz", taken.Owner)

	// The holder keeps it through its own edits; the refusals wrote nothing.
	_, err = repo.UpdateUser(ctx, "juliehazz", domain.UserPatch{Email: strp("julie@example.com"), Notes: strp("UI")}.Apply)
	require.NoError(t, err)
	users, err := repo.ListUsers(ctx)
	require.NoError(t, err)
	require.Len(t, users, 2)
	require.Empty(t, users[1].Email, "tadasant")

	_, err = pool.Exec(ctx, `UPDATE users SET email = 'JULIE@EXAMPLE.COM' WHERE key = 'tadasant'`)
	require.Equal(t, pgdb.CodeUniqueViolation, pgdb.Code(err))
	require.Equal(t, emailIndex, pgdb.ConstraintName(err))
	require.Equal(t, &domain.EmailTakenError{Email: "x@y"}, userWriteError(err, domain.User{Email: "x@y"}), "a lost race is named too")
	_, err = pool.Exec(ctx, `INSERT INTO users (key, display_name) VALUES ('a', 'A'), ('b', 'B')`)
	require.NoError(t, err, "any number of users have no email")
}

// The migration that makes emails unique brings rows written before it in
// line: trimmed and lower-cased, and a duplicate cleared from every user but
// the first created.
func TestEmailMigrationNormalisesExistingRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.DB(t, testSets...)
	up, err := migrations.ReadFile("migrations/0004_user_email_ignoring_case.up.sql")
	require.NoError(t, err)
	down, err := migrations.ReadFile("migrations/0004_user_email_ignoring_case.down.sql")
	require.NoError(t, err)

	_, err = pool.Exec(ctx, string(down))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
		UPDATE users SET email = ' Julie@Example.com ', created_at = '2026-01-01' WHERE key = 'juliehazz';
		UPDATE users SET email = 'TADAS@example.com' WHERE key = 'tadasant';
		INSERT INTO users (key, display_name, email, created_at) VALUES
			('sam', 'Sam', 'julie@EXAMPLE.com', '2026-02-01'), ('blank', 'Blank', '   ', now())`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, string(up))
	require.NoError(t, err)

	emails := map[string]*string{}
	rows, err := pool.Query(ctx, `SELECT key, email FROM users`)
	require.NoError(t, err)
	for rows.Next() {
		var key string
		var email *string
		require.NoError(t, rows.Scan(&key, &email))
		emails[key] = email
	}
	require.NoError(t, rows.Err())
	require.Equal(t, strp("julie@example.com"), emails["juliehazz"], "the first created keeps it")
	require.Nil(t, emails["sam"], "the later duplicate is cleared")
	require.Equal(t, strp("tadas@example.com"), emails["tadasant"])
	require.Nil(t, emails["blank"])
}

func TestHumanMessagesAreImmutable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.DB(t, testSets...)
	repo := NewProvenance(pool)

	m, _, err := repo.RecordHumanMessage(ctx, domain.HumanMessage{Author: "tadasant", Provenance: domain.WebUIFollowUp,
		AuthoredInSessionID: 7, Content: "ship it", OccurredAt: time.Unix(100, 0)})
	require.NoError(t, err)
	require.Positive(t, m.ID)
	require.False(t, m.RecordedAt.IsZero())

	for _, sql := range []string{
		`UPDATE human_messages SET content = 'do not ship it'`,
		`UPDATE human_messages SET author = 'juliehazz' WHERE id = $1`,
		`DELETE FROM human_messages WHERE id = $1`,
		`DELETE FROM human_messages`,
		`TRUNCATE human_messages`,
	} {
		args := []any{}
		if strings.Contains(sql, "$1") {
			args = append(args, m.ID)
		}
		_, err := pool.Exec(ctx, sql, args...)
		require.ErrorContains(t, err, "human_messages are immutable evidence", sql)
	}

	// The provenance kinds are the database's to enforce as well.
	_, err = pool.Exec(ctx, `INSERT INTO human_messages (author, provenance, authored_in_session_id, content, occurred_at)
		VALUES ('tadasant', 'mcp.follow_up', 7, 'x', now())`)
	require.Equal(t, "23514", pgdb.Code(err))

	// A session's hard delete leaves the record as evidence naming it.
	_, err = pool.Exec(ctx, `INSERT INTO session_nodes (session_id, title, agent_root, status, genesis, scheduling_class, session_updated_at)
		VALUES (7, 't', 'a', 'waiting', 'api', 'priority', now())`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `DELETE FROM session_nodes WHERE session_id = 7`)
	require.NoError(t, err)

	got, err := repo.HumanMessagesIn(ctx, []int64{7})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "ship it", got[0].Content)
	require.Equal(t, "tadasant", got[0].Author)
}

func TestHumanMessagesIn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	repo := NewProvenance(pgtest.DB(t, testSets...))
	for i, s := range []int64{1, 2, 3, 2} {
		_, _, err := repo.RecordHumanMessage(ctx, domain.HumanMessage{Author: "gone-user", Provenance: domain.SlackDM,
			AuthoredInSessionID: s, Content: "m", SlackPermalink: "https://x/p", OccurredAt: time.Unix(int64(100+i), 0)})
		require.NoError(t, err)
	}
	got, err := repo.HumanMessagesIn(ctx, []int64{2, 3, 99})
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, []int64{2, 3, 2}, []int64{got[0].AuthoredInSessionID, got[1].AuthoredInSessionID, got[2].AuthoredInSessionID})
	require.True(t, got[0].OccurredAt.After(got[1].OccurredAt), "newest first")
	require.Equal(t, "gone-user", got[0].Author, "an author key is stored verbatim, resolving or not")
	require.Equal(t, "https://x/p", got[0].SlackPermalink)
}

// A key records one row, however many calls race with it; no key records
// every time, as before keys.
func TestAKeyRecordsOneRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.DB(t, testSets...)
	repo := NewProvenance(pool)
	m := domain.HumanMessage{Author: "tadasant", Provenance: domain.SlackChannelMessage, AuthoredInSessionID: 7,
		Content: "ship it", OccurredAt: time.Unix(100, 0), IdempotencyKey: "slack/Ev1"}

	var wg sync.WaitGroup
	saved := make([]domain.HumanMessage, 8)
	created := make([]bool, 8)
	for i := range saved {
		wg.Go(func() {
			var err error
			saved[i], created[i], err = repo.RecordHumanMessage(ctx, m)
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	require.Equal(t, 1, countTrue(created), "one call created it")
	for _, s := range saved {
		require.Equal(t, saved[0].ID, s.ID, "every call answers the one row")
		require.Equal(t, "slack/Ev1", s.IdempotencyKey)
	}
	got, found, err := repo.HumanMessageByKey(ctx, "slack/Ev1")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, saved[0].ID, got.ID)
	_, found, err = repo.HumanMessageByKey(ctx, "slack/Ev2")
	require.NoError(t, err)
	require.False(t, found)

	m.IdempotencyKey = ""
	for range 2 {
		_, created, err := repo.RecordHumanMessage(ctx, m)
		require.NoError(t, err)
		require.True(t, created)
	}
	all, err := repo.HumanMessagesIn(ctx, []int64{7})
	require.NoError(t, err)
	require.Len(t, all, 3)
	_, err = pool.Exec(ctx, `INSERT INTO human_messages (author, provenance, authored_in_session_id, content, occurred_at, idempotency_key)
		VALUES ('tadasant', 'slack.dm', 7, 'x', now(), '')`)
	require.Equal(t, "23514", pgdb.Code(err), "an empty key is no key")
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func strp(s string) *string { return &s }
