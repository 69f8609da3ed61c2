package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/notification/internal/app"
	"github.com/zimmerhq/zimmer/services/notification/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// Alerts is the Postgres AlertRepository.
type Alerts struct{ pool *pgxpool.Pool }

var _ app.AlertRepository = (*Alerts)(nil)

// NewAlerts returns a repository over pool.
func NewAlerts(pool *pgxpool.Pool) *Alerts { return &Alerts{pool: pool} }

const alertColumns = `id, dedup_key, summary, details, occurrences, first_seen_at, last_seen_at, dedup_until`

// raiseAttempts bounds the retries of a raise whose conflicting alert was
// gone when it looked for it.
const raiseAttempts = 5

// errAbsorberGone says the insert conflicted with an alert that the next
// statement could not find; the raise starts over.
var errAbsorberGone = errors.New("the alert that absorbed the raise is gone")

// Raise implements app.AlertRepository. The exclusion constraint
// alerts_one_open_per_key decides, not a read before the write: the insert
// does nothing when an alert of the key overlaps fresh's window (waiting
// for a concurrent opener to commit or roll back first), and then the
// earliest such alert is locked and counts the repeat. Both statements
// test the same overlap with the same times, so a conflicting alert is
// always found by the second statement; should one have vanished in between
// (nothing deletes alerts today), the raise starts over.
func (s *Alerts) Raise(ctx context.Context, fresh domain.Alert) (domain.Alert, bool, error) {
	details, err := json.Marshal(fresh.Details)
	if err != nil {
		return domain.Alert{}, false, fmt.Errorf("encode alert details: %w", err)
	}
	for range raiseAttempts {
		var (
			got    domain.Alert
			opened bool
		)
		err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
			a, err := scanAlert(tx.QueryRow(ctx, `
				INSERT INTO alerts (dedup_key, summary, details, occurrences, first_seen_at, last_seen_at, dedup_until)
				VALUES ($1, $2, $3, $4, $5, $6, $7)
				ON CONFLICT ON CONSTRAINT alerts_one_open_per_key DO NOTHING
				RETURNING `+alertColumns,
				fresh.DedupKey, fresh.Summary, details, fresh.Occurrences, fresh.FirstSeenAt, fresh.LastSeenAt, fresh.DedupUntil))
			switch {
			case err == nil:
				got, opened = a, true
				return nil
			case !errors.Is(err, pgx.ErrNoRows):
				return fmt.Errorf("open alert %q: %w", fresh.DedupKey, err)
			}
			// The range predicate is the constraint's, so the gist index
			// behind it answers.
			open, err := scanAlert(tx.QueryRow(ctx, `
				SELECT `+alertColumns+` FROM alerts
				WHERE dedup_key = $1 AND tstzrange(first_seen_at, dedup_until) && tstzrange($2, $3)
				ORDER BY first_seen_at
				LIMIT 1
				FOR UPDATE`,
				fresh.DedupKey, fresh.FirstSeenAt, fresh.DedupUntil))
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return errAbsorberGone
			case err != nil:
				return fmt.Errorf("lock open alert %q: %w", fresh.DedupKey, err)
			}
			got = open.Repeat(fresh.FirstSeenAt)
			if _, err := tx.Exec(ctx, `UPDATE alerts SET occurrences = $2, last_seen_at = $3 WHERE id = $1`,
				got.ID, got.Occurrences, got.LastSeenAt); err != nil {
				return fmt.Errorf("count repeat on alert %d: %w", got.ID, err)
			}
			return nil
		})
		if errors.Is(err, errAbsorberGone) {
			continue
		}
		if err != nil {
			return domain.Alert{}, false, err
		}
		return got, opened, nil
	}
	return domain.Alert{}, false, fmt.Errorf("raise alert %q: %w after %d attempts", fresh.DedupKey, errAbsorberGone, raiseAttempts)
}

// List implements app.AlertRepository.
func (s *Alerts) List(ctx context.Context, limit int) ([]domain.Alert, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+alertColumns+` FROM alerts ORDER BY first_seen_at DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	defer rows.Close()
	alerts := []domain.Alert{}
	for rows.Next() {
		a, err := scanAlert(rows)
		if err != nil {
			return nil, fmt.Errorf("list alerts: %w", err)
		}
		alerts = append(alerts, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	return alerts, nil
}

// MarkPagingStarted implements app.AlertRepository.
func (s *Alerts) MarkPagingStarted(ctx context.Context, id int64, at time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE alerts SET paging_started_at = coalesce(paging_started_at, $2) WHERE id = $1`, id, at); err != nil {
		return fmt.Errorf("record the page of alert %d started: %w", id, err)
	}
	return nil
}

// PagingNotStarted implements app.AlertRepository. The partial index
// alerts_paging_not_started holds just the unstarted, a handful at most.
func (s *Alerts) PagingNotStarted(ctx context.Context, openedBefore time.Time, limit int) ([]domain.Alert, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+alertColumns+` FROM alerts
		WHERE paging_started_at IS NULL AND first_seen_at < $1
		ORDER BY id
		LIMIT $2`, openedBefore, limit)
	if err != nil {
		return nil, fmt.Errorf("find alerts whose page never started: %w", err)
	}
	alerts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Alert, error) { return scanAlert(row) })
	if err != nil {
		return nil, fmt.Errorf("find alerts whose page never started: %w", err)
	}
	return alerts, nil
}

func scanAlert(row pgx.Row) (domain.Alert, error) {
	var (
		a       domain.Alert
		details []byte
	)
	if err := row.Scan(&a.ID, &a.DedupKey, &a.Summary, &details, &a.Occurrences, &a.FirstSeenAt, &a.LastSeenAt, &a.DedupUntil); err != nil {
		return domain.Alert{}, err
	}
	if err := json.Unmarshal(details, &a.Details); err != nil {
		return domain.Alert{}, fmt.Errorf("decode details of alert %d: %w", a.ID, err)
	}
	a.FirstSeenAt, a.LastSeenAt, a.DedupUntil = utc(a.FirstSeenAt), utc(a.LastSeenAt), utc(a.DedupUntil)
	return a, nil
}

func utc(t time.Time) time.Time { return t.UTC() }
