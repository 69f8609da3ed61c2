package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// Provenance keeps the users roster and the human messages.
type Provenance struct{ db *pgxpool.Pool }

var (
	_ app.UserRepository         = (*Provenance)(nil)
	_ app.HumanMessageRepository = (*Provenance)(nil)
)

// NewProvenance returns the store on the service's pool.
func NewProvenance(pool *pgxpool.Pool) *Provenance { return &Provenance{db: pool} }

const userColumns = `u.key, u.display_name, COALESCE(u.email, ''), u.notes, u.created_at, u.updated_at,
	COALESCE((SELECT array_agg(s.slack_user_id ORDER BY s.slack_user_id) FROM user_slack_ids s WHERE s.user_key = u.key), '{}')`

func scanUser(row pgx.Row) (domain.User, error) {
	var u domain.User
	err := row.Scan(&u.Key, &u.DisplayName, &u.Email, &u.Notes, &u.CreatedAt, &u.UpdatedAt, &u.SlackUserIDs)
	return u, err
}

// ListUsers implements app.UserRepository.
func (p *Provenance) ListUsers(ctx context.Context) ([]domain.User, error) {
	rows, err := p.db.Query(ctx, `SELECT `+userColumns+` FROM users u ORDER BY u.key`)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	users, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.User, error) { return scanUser(r) })
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return users, nil
}

// CreateUser implements app.UserRepository.
func (p *Provenance) CreateUser(ctx context.Context, u domain.User) (domain.User, error) {
	var out domain.User
	err := pgdb.InTx(ctx, p.db, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if err := checkEmailFree(ctx, tx, u.Key, u.Email); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO users (key, display_name, email, notes) VALUES ($1, $2, NULLIF($3, ''), $4)`,
			u.Key, u.DisplayName, u.Email, u.Notes); err != nil {
			return userWriteError(err, u)
		}
		if err := setSlackIDs(ctx, tx, u.Key, u.SlackUserIDs); err != nil {
			return err
		}
		var err error
		out, err = scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users u WHERE u.key = $1`, u.Key))
		return err
	})
	return out, err
}

// UpdateUser implements app.UserRepository. The row lock serialises edits
// of one user; the primary key of user_slack_ids settles races between
// two users claiming one Slack ID.
func (p *Provenance) UpdateUser(ctx context.Context, key string, edit func(*domain.User) error) (domain.User, error) {
	var out domain.User
	err := pgdb.InTx(ctx, p.db, pgx.ReadCommitted, func(tx pgx.Tx) error {
		u, err := scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users u WHERE u.key = $1 FOR UPDATE`, key))
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.UserNotFound(key)
		}
		if err != nil {
			return err
		}
		if err := edit(&u); err != nil {
			return err
		}
		u.Key = key // immutable, whatever edit did
		if err := checkEmailFree(ctx, tx, key, u.Email); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET display_name = $2, email = NULLIF($3, ''), notes = $4, updated_at = now() WHERE key = $1`,
			key, u.DisplayName, u.Email, u.Notes); err != nil {
			return userWriteError(err, u)
		}
		if err := setSlackIDs(ctx, tx, key, u.SlackUserIDs); err != nil {
			return err
		}
		out, err = scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users u WHERE u.key = $1`, key))
		return err
	})
	return out, err
}

// emailIndex is the unique index that keeps one email address, compared
// ignoring case, to one user.
const emailIndex = "users_email_lower"

// checkEmailFree refuses an email address (compared ignoring case) another
// user holds, naming that user. The unique index settles a race between
// two writers that both found it free (userWriteError).
func checkEmailFree(ctx context.Context, tx pgx.Tx, key, email string) error {
	if email == "" {
		return nil
	}
	var owner string
	err := tx.QueryRow(ctx, `SELECT key FROM users WHERE lower(email) = lower($1) AND key <> $2 ORDER BY key LIMIT 1`, email, key).Scan(&owner)
	switch {
	case err == nil:
		return &domain.EmailTakenError{Email: email, Owner: owner}
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	}
	return err
}

// userWriteError translates the unique violations of a write of u's row.
func userWriteError(err error, u domain.User) error {
	if pgdb.Code(err) != pgdb.CodeUniqueViolation {
		return err
	}
	if pgdb.ConstraintName(err) == emailIndex {
		return &domain.EmailTakenError{Email: u.Email}
	}
	return &domain.UserExistsError{Key: u.Key}
}

// setSlackIDs makes ids key's Slack IDs, refusing any another user holds.
func setSlackIDs(ctx context.Context, tx pgx.Tx, key string, ids []string) error {
	var id, owner string
	err := tx.QueryRow(ctx, `SELECT slack_user_id, user_key FROM user_slack_ids
		WHERE slack_user_id = ANY($1) AND user_key <> $2 ORDER BY slack_user_id LIMIT 1`, ids, key).Scan(&id, &owner)
	switch {
	case err == nil:
		return &domain.SlackIDTakenError{SlackUserID: id, Owner: owner, Claimant: key}
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM user_slack_ids WHERE user_key = $1 AND NOT (slack_user_id = ANY($2))`, key, ids); err != nil {
		return err
	}
	for _, id := range ids {
		_, err := tx.Exec(ctx, `INSERT INTO user_slack_ids (slack_user_id, user_key) VALUES ($1, $2) ON CONFLICT (slack_user_id) DO NOTHING`, id, key)
		if err != nil {
			return err
		}
		// A concurrent claim committed between the check and the insert.
		var holder string
		if err := tx.QueryRow(ctx, `SELECT user_key FROM user_slack_ids WHERE slack_user_id = $1`, id).Scan(&holder); err != nil {
			return err
		}
		if holder != key {
			return &domain.SlackIDTakenError{SlackUserID: id, Owner: holder, Claimant: key}
		}
	}
	return nil
}

const humanMessageColumns = `id, author, provenance, authored_in_session_id, content, COALESCE(slack_permalink, ''), occurred_at, recorded_at,
	COALESCE(idempotency_key, '')`

func scanHumanMessage(row pgx.Row) (domain.HumanMessage, error) {
	var m domain.HumanMessage
	var prov string
	err := row.Scan(&m.ID, &m.Author, &prov, &m.AuthoredInSessionID, &m.Content, &m.SlackPermalink, &m.OccurredAt, &m.RecordedAt, &m.IdempotencyKey)
	m.Provenance = domain.Provenance(prov)
	return m, err
}

// RecordHumanMessage implements app.HumanMessageRepository. There is no
// update or delete; the table's triggers refuse both anyway. The key's
// unique constraint decides between concurrent calls with one key: the
// loser writes nothing (ON CONFLICT DO NOTHING) and reads the winner's
// row, which it committed before the loser's insert returned.
func (p *Provenance) RecordHumanMessage(ctx context.Context, m domain.HumanMessage) (domain.HumanMessage, bool, error) {
	saved, err := scanHumanMessage(p.db.QueryRow(ctx, `
		INSERT INTO human_messages (author, provenance, authored_in_session_id, content, slack_permalink, occurred_at, idempotency_key)
		VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6, NULLIF($7, ''))
		ON CONFLICT (idempotency_key) DO NOTHING
		RETURNING `+humanMessageColumns,
		m.Author, string(m.Provenance), m.AuthoredInSessionID, m.Content, m.SlackPermalink, m.OccurredAt, m.IdempotencyKey))
	if errors.Is(err, pgx.ErrNoRows) && m.IdempotencyKey != "" {
		first, found, err := p.HumanMessageByKey(ctx, m.IdempotencyKey)
		if err == nil && !found {
			err = fmt.Errorf("human message keyed %q conflicted but cannot be read", m.IdempotencyKey)
		}
		return first, false, err
	}
	if err != nil {
		return domain.HumanMessage{}, false, fmt.Errorf("insert human message: %w", err)
	}
	return saved, true, nil
}

// HumanMessageByKey implements app.HumanMessageRepository.
func (p *Provenance) HumanMessageByKey(ctx context.Context, key string) (domain.HumanMessage, bool, error) {
	m, err := scanHumanMessage(p.db.QueryRow(ctx, `SELECT `+humanMessageColumns+` FROM human_messages WHERE idempotency_key = $1`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.HumanMessage{}, false, nil
	}
	if err != nil {
		return domain.HumanMessage{}, false, fmt.Errorf("read human message keyed %q: %w", key, err)
	}
	return m, true, nil
}

// HumanMessagesIn implements app.HumanMessageRepository, newest first, on
// human_messages_session. The order they are shown in is the domain's
// (GatherHumanMessages), not this one.
func (p *Provenance) HumanMessagesIn(ctx context.Context, sessionIDs []int64) ([]domain.HumanMessage, error) {
	rows, err := p.db.Query(ctx, `SELECT `+humanMessageColumns+` FROM human_messages
		WHERE authored_in_session_id = ANY($1) ORDER BY occurred_at DESC, id DESC`, sessionIDs)
	if err != nil {
		return nil, fmt.Errorf("list human messages: %w", err)
	}
	msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.HumanMessage, error) { return scanHumanMessage(r) })
	if err != nil {
		return nil, fmt.Errorf("list human messages: %w", err)
	}
	return msgs, nil
}
