// Package pgdb opens the service's Postgres pool, applies its embedded
// migrations and runs transactions.
package pgdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DBTX is what stores need: satisfied by *pgxpool.Pool and pgx.Tx alike, so a
// store works inside or outside a caller's transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

var (
	_ DBTX = (*pgxpool.Pool)(nil)
	_ DBTX = (pgx.Tx)(nil)
)

// defaultMaxConns is the pool size when the URL does not set pool_max_conns.
const defaultMaxConns = 16

// Open connects a pool and checks it answers.
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgx defaults to max(4, GOMAXPROCS): too few for a service whose
		// background loops each hold a connection (an outbox relay keeps one
		// to LISTEN and one per delivery round) beside its requests.
		cfg.MaxConns = max(cfg.MaxConns, defaultMaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database %s@%s/%s: %w", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Database, err)
	}
	return pool, nil
}

// TxBeginner starts transactions; *pgxpool.Pool satisfies it.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// InTx runs fn in a transaction at the given isolation level and commits it,
// rolling back on error. Serialization failures and deadlocks are retried a
// few times because they say nothing about the request itself.
func InTx(ctx context.Context, db TxBeginner, iso pgx.TxIsoLevel, fn func(pgx.Tx) error) error {
	var err error
	for i := range TxAttempts {
		if err = inTxOnce(ctx, db, iso, fn); !Retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(i+1) * 5 * time.Millisecond):
		}
	}
	return err
}

func inTxOnce(ctx context.Context, db TxBeginner, iso pgx.TxIsoLevel, fn func(pgx.Tx) error) error {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	// Roll back even when ctx is what ended the work: with a cancelled
	// context pgx drops the connection instead, and the transaction's row
	// locks would outlive the call until the server notices.
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	return nil
}

// SQLSTATE codes the stores interpret.
const (
	CodeUniqueViolation      = "23505"
	CodeForeignKeyViolation  = "23503"
	CodeSerializationFailure = "40001"
	CodeDeadlockDetected     = "40P01"
)

// Code returns the SQLSTATE of a Postgres error, or "".
func Code(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// ConstraintName returns the violated constraint of a Postgres error, or "".
func ConstraintName(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}

// TxAttempts bounds how often a transaction that met a serialization
// failure or a deadlock is tried: neither says anything about the request,
// but one that keeps meeting them is reported.
const TxAttempts = 5

// Retryable reports whether a transaction failed only because it met a
// serialization failure or a deadlock, so running it again may succeed.
func Retryable(err error) bool {
	c := Code(err)
	return c == CodeSerializationFailure || c == CodeDeadlockDetected
}
