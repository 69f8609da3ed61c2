package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/lineage/internal/app"
	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// SignIns keeps the console's sign-ins.
type SignIns struct{ db *pgxpool.Pool }

var _ app.SignInRepository = (*SignIns)(nil)

// NewSignIns returns the store on the service's pool.
func NewSignIns(pool *pgxpool.Pool) *SignIns { return &SignIns{db: pool} }

// StartSignIn implements app.SignInRepository. The table lock serialises
// sign-ins (rare: one human) so that concurrent ones cannot overrun max;
// lookups and sign-outs wait for it only the few milliseconds a start
// takes.
func (s *SignIns) StartSignIn(ctx context.Context, digest []byte, csrf string, now, expiredBefore time.Time, max int) error {
	return pgdb.InTx(ctx, s.db, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE console_sign_ins IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("lock console sign-ins: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM console_sign_ins WHERE last_seen < $1`, expiredBefore); err != nil {
			return fmt.Errorf("delete expired console sign-ins: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM console_sign_ins WHERE cookie_sha256 IN (
			SELECT cookie_sha256 FROM console_sign_ins ORDER BY last_seen DESC, created_at DESC OFFSET $1)`, max-1); err != nil {
			return fmt.Errorf("end the console sign-ins idle longest: %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO console_sign_ins (cookie_sha256, csrf, created_at, last_seen) VALUES ($1, $2, $3, $3)`,
			digest, csrf, now)
		if pgdb.Code(err) == pgdb.CodeUniqueViolation {
			return fmt.Errorf("a console sign-in with this cookie exists: %w", domain.ErrAlreadyExists)
		}
		if err != nil {
			return fmt.Errorf("insert a console sign-in: %w", err)
		}
		return nil
	})
}

// GetSignIn implements app.SignInRepository in one statement: the read and,
// when due, the touch (a data-modifying WITH runs whether or not the
// outer query reads it).
func (s *SignIns) GetSignIn(ctx context.Context, digest []byte, now, expiredBefore, touchBefore time.Time, touch bool) (string, error) {
	var csrf string
	err := s.db.QueryRow(ctx, `
		WITH live AS (
			SELECT cookie_sha256, csrf, last_seen FROM console_sign_ins WHERE cookie_sha256 = $1 AND last_seen >= $2
		), touched AS (
			UPDATE console_sign_ins s SET last_seen = $3 FROM live
			WHERE $4 AND s.cookie_sha256 = live.cookie_sha256 AND live.last_seen < $5
			RETURNING 1
		)
		SELECT csrf FROM live`, digest, expiredBefore, now, touch, touchBefore).Scan(&csrf)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("no live console sign-in with this cookie (signed out, expired or never signed in): %w", domain.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("read a console sign-in: %w", err)
	}
	return csrf, nil
}

// EndSignIn implements app.SignInRepository.
func (s *SignIns) EndSignIn(ctx context.Context, digest []byte) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM console_sign_ins WHERE cookie_sha256 = $1`, digest); err != nil {
		return fmt.Errorf("delete a console sign-in: %w", err)
	}
	return nil
}

// AttemptSignIn implements app.SignInRepository. A transaction-scoped
// advisory lock on the address serialises its attempts, so that attempts
// sent at once (to one replica or several) are counted one by one and
// never more than max are let through.
func (s *SignIns) AttemptSignIn(ctx context.Context, address string, now, since time.Time, max int) (attempts []time.Time, counted bool, err error) {
	err = pgdb.InTx(ctx, s.db, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('lineage.console_sign_in_attempts:' || $1, 0))`, address); err != nil {
			return fmt.Errorf("lock the address's sign-in attempts: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM console_sign_in_attempts WHERE at <= $1`, since); err != nil {
			return fmt.Errorf("delete old sign-in attempts: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT at FROM console_sign_in_attempts WHERE address = $1 ORDER BY at, id`, address)
		if err != nil {
			return fmt.Errorf("read the address's sign-in attempts: %w", err)
		}
		attempts, err = pgx.CollectRows(rows, pgx.RowTo[time.Time])
		if err != nil {
			return fmt.Errorf("read the address's sign-in attempts: %w", err)
		}
		if len(attempts) >= max {
			counted = false
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO console_sign_in_attempts (address, at) VALUES ($1, $2)`, address, now); err != nil {
			return fmt.Errorf("count a sign-in attempt: %w", err)
		}
		attempts, counted = append(attempts, now), true
		return nil
	})
	return attempts, counted, err
}

// ClearSignInAttempts implements app.SignInRepository.
func (s *SignIns) ClearSignInAttempts(ctx context.Context, address string) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM console_sign_in_attempts WHERE address = $1`, address); err != nil {
		return fmt.Errorf("clear the address's sign-in attempts: %w", err)
	}
	return nil
}
