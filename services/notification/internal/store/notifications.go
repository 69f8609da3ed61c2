package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// Notifications is the Postgres NotificationRepository.
type Notifications struct{ pool *pgxpool.Pool }

var _ app.NotificationRepository = (*Notifications)(nil)

// NewNotifications returns a repository over pool.
func NewNotifications(pool *pgxpool.Pool) *Notifications { return &Notifications{pool: pool} }

// The inbox topics under which lifecycle's effects are claimed: a label of
// what the claim applied, in notification's words (the event id alone
// deduplicates; lifecycle names its effects).
const (
	topicStale   = "notifications.stale"
	topicDismiss = "notifications.dismiss"
)

const notificationColumns = `id, type, coalesce(session_id, 0), title, body, marker, coalesce(dedup_key, ''),
	created_at, occurred_at, read_at, dismissed_at, stale_at, pushed_at`

// Create implements app.NotificationRepository. The unique indexes decide,
// not a read before the write: an insert that conflicts with either (one
// pause's notification, one dedup key) inserts nothing, and the
// notification it conflicted with is returned.
func (s *Notifications) Create(ctx context.Context, n domain.Notification) (domain.Notification, bool, error) {
	var (
		got     domain.Notification
		created bool
	)
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		row, err := scanNotification(tx.QueryRow(ctx, `
			INSERT INTO notifications (type, session_id, title, body, marker, dedup_key, created_at, occurred_at)
			VALUES ($1, nullif($2::bigint, 0), $3, $4, $5, nullif($6::text, ''), $7, $8)
			ON CONFLICT DO NOTHING
			RETURNING `+notificationColumns,
			string(n.Type), n.SessionID, n.Title, n.Body, n.Marker, n.DedupKey, n.CreatedAt, n.ReportedAt()))
		switch {
		case err == nil:
			got, created = row, true
			return nil
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("create %s notification of session %d: %w", n.Type, n.SessionID, err)
		}
		// The conflicting row is committed (ON CONFLICT waited for it).
		got, err = scanNotification(tx.QueryRow(ctx, `
			SELECT `+notificationColumns+` FROM notifications
			WHERE (dedup_key = nullif($1::text, ''))
			   OR (type = 'needs_input' AND $2::text = 'needs_input' AND session_id = $3::bigint AND marker = $4::bigint)`,
			n.DedupKey, string(n.Type), n.SessionID, n.Marker))
		if err != nil {
			return fmt.Errorf("find the %s notification of session %d that exists: %w", n.Type, n.SessionID, err)
		}
		return nil
	})
	return got, created, err
}

// Delete implements app.NotificationRepository.
func (s *Notifications) Delete(ctx context.Context, id int64) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM notifications WHERE id = $1`, id); err != nil {
		return fmt.Errorf("delete notification %d: %w", id, err)
	}
	return nil
}

// List implements app.NotificationRepository. Both reads see one snapshot,
// so the count agrees with the page.
func (s *Notifications) List(ctx context.Context, f domain.Filter) ([]domain.Notification, int, error) {
	var (
		rows   []domain.Notification
		unread int
	)
	err := pgdb.InTx(ctx, s.pool, pgx.RepeatableRead, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, `
			SELECT `+notificationColumns+` FROM notifications
			WHERE (NOT $1::boolean OR read_at IS NULL)
			  AND ($2::text = '' OR type = $2::text)
			  AND ($3::bigint = 0 OR session_id = $3::bigint)
			  AND ($4::boolean OR dismissed_at IS NULL)
			  AND ($5::bigint = 0 OR id < $5::bigint)
			ORDER BY id DESC
			LIMIT $6`,
			f.Unread, string(f.Type), f.SessionID, f.IncludeDismissed, f.BeforeID, f.Limit)
		if err != nil {
			return fmt.Errorf("list notifications: %w", err)
		}
		if rows, err = pgx.CollectRows(r, func(row pgx.CollectableRow) (domain.Notification, error) {
			return scanNotification(row)
		}); err != nil {
			return fmt.Errorf("list notifications: %w", err)
		}
		if err := tx.QueryRow(ctx, `
			SELECT count(*) FROM notifications
			WHERE read_at IS NULL AND dismissed_at IS NULL
			  AND ($1::text = '' OR type = $1::text)
			  AND ($2::bigint = 0 OR session_id = $2::bigint)`,
			string(f.Type), f.SessionID).Scan(&unread); err != nil {
			return fmt.Errorf("count unread notifications: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return rows, unread, nil
}

// MarkRead implements app.NotificationRepository.
func (s *Notifications) MarkRead(ctx context.Context, id int64, at time.Time) (domain.Notification, error) {
	return s.stamp(ctx, "read_at", "mark read", id, at)
}

// Dismiss implements app.NotificationRepository.
func (s *Notifications) Dismiss(ctx context.Context, id int64, at time.Time) (domain.Notification, error) {
	return s.stamp(ctx, "dismissed_at", "dismiss", id, at)
}

// stamp sets column (one of this file's constants, never input) to at
// unless it is set already.
func (s *Notifications) stamp(ctx context.Context, column, what string, id int64, at time.Time) (domain.Notification, error) {
	n, err := scanNotification(s.pool.QueryRow(ctx, `
		UPDATE notifications SET `+column+` = coalesce(`+column+`, $2) WHERE id = $1
		RETURNING `+notificationColumns, id, at))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Notification{}, fmt.Errorf("%w: no notification has id %d", domain.ErrNotFound, id)
	}
	if err != nil {
		return domain.Notification{}, fmt.Errorf("%s notification %d: %w", what, id, err)
	}
	return n, nil
}

// MarkAllRead implements app.NotificationRepository.
func (s *Notifications) MarkAllRead(ctx context.Context, sessionID int64, at time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE notifications SET read_at = $2
		WHERE read_at IS NULL AND dismissed_at IS NULL AND ($1::bigint = 0 OR session_id = $1::bigint)`, sessionID, at)
	if err != nil {
		return 0, fmt.Errorf("mark notifications read: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// MarkPushed implements app.NotificationRepository.
func (s *Notifications) MarkPushed(ctx context.Context, id int64, at time.Time) (time.Time, error) {
	var created time.Time
	err := s.pool.QueryRow(ctx, `UPDATE notifications SET pushed_at = $2 WHERE id = $1 AND pushed_at IS NULL RETURNING created_at`,
		id, at).Scan(&created)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, fmt.Errorf("mark notification %d pushed: %w", id, err)
	}
	return created, nil
}

// MarkPushStarted implements app.NotificationRepository.
func (s *Notifications) MarkPushStarted(ctx context.Context, id int64, at time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE notifications SET push_started_at = coalesce(push_started_at, $2) WHERE id = $1`, id, at); err != nil {
		return fmt.Errorf("record the push of notification %d started: %w", id, err)
	}
	return nil
}

// PushNotStarted implements app.NotificationRepository. The predicate is
// the partial index notifications_push_not_started's, which holds just the
// unstarted.
func (s *Notifications) PushNotStarted(ctx context.Context, createdBefore time.Time, limit int) ([]domain.Notification, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+notificationColumns+` FROM notifications
		WHERE push_started_at IS NULL AND pushed_at IS NULL AND type <> 'needs_input' AND created_at < $1
		ORDER BY id
		LIMIT $2`, createdBefore, limit)
	if err != nil {
		return nil, fmt.Errorf("find notifications whose push never started: %w", err)
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Notification, error) { return scanNotification(row) })
	if err != nil {
		return nil, fmt.Errorf("find notifications whose push never started: %w", err)
	}
	return got, nil
}

// MarkStale implements app.NotificationRepository: domain.StaleOnResume's
// selection, in SQL.
func (s *Notifications) MarkStale(ctx context.Context, eventID string, r domain.StaleOnResume, at time.Time) (bool, error) {
	return s.applyOnce(ctx, eventID, topicStale, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			UPDATE notifications SET stale_at = $4
			WHERE session_id = $1 AND dismissed_at IS NULL AND stale_at IS NULL
			  AND CASE WHEN type = 'needs_input' THEN marker <= $2 ELSE occurred_at <= $3 END`,
			r.SessionID, r.NeedsInputCount, r.ResumedAt, at)
		if err != nil {
			return fmt.Errorf("mark session %d's notifications stale: %w", r.SessionID, err)
		}
		return nil
	})
}

// DismissSession implements app.NotificationRepository.
func (s *Notifications) DismissSession(ctx context.Context, eventID string, sessionID int64, createdUpTo, at time.Time) (bool, error) {
	return s.applyOnce(ctx, eventID, topicDismiss, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			UPDATE notifications SET dismissed_at = $3
			WHERE session_id = $1 AND created_at <= $2 AND dismissed_at IS NULL`, sessionID, createdUpTo, at)
		if err != nil {
			return fmt.Errorf("dismiss session %d's notifications: %w", sessionID, err)
		}
		return nil
	})
}

// applyOnce runs apply in the transaction that claims eventID in the
// inbox, so a redelivered event changes nothing.
func (s *Notifications) applyOnce(ctx context.Context, eventID, topic string, apply func(pgx.Tx) error) (bool, error) {
	var applied bool
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		fresh, err := inbox.Claim(ctx, tx, eventID, topic)
		if err != nil || !fresh {
			return err
		}
		applied = true
		return apply(tx)
	})
	if err != nil {
		return false, err
	}
	return applied, nil
}

func scanNotification(row pgx.Row) (domain.Notification, error) {
	var n domain.Notification
	if err := row.Scan(&n.ID, &n.Type, &n.SessionID, &n.Title, &n.Body, &n.Marker, &n.DedupKey,
		&n.CreatedAt, &n.OccurredAt, &n.ReadAt, &n.DismissedAt, &n.StaleAt, &n.PushedAt); err != nil {
		return domain.Notification{}, err
	}
	n.CreatedAt, n.OccurredAt = utc(n.CreatedAt), utc(n.OccurredAt)
	for _, t := range []*time.Time{n.ReadAt, n.DismissedAt, n.StaleAt, n.PushedAt} {
		if t != nil {
			*t = utc(*t)
		}
	}
	return n, nil
}
