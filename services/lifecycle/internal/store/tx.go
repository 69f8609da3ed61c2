package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// Every write is one transaction in two round trips on one connection:
// BEGIN travels in one batch with the statements that lock what the
// decision reads (read), and COMMIT in a second with every write it decided
// (writes.commit). The decision is made in between, from the locked rows, so
// nothing stale is ever written and writes of one session queue on its row
// lock; other sessions never wait.

// inTx runs write in a transaction on a connection of its own, retrying
// serialization failures and deadlocks; if they persist, the error is a
// domain.ErrConflict, safe for the caller to retry.
func (s *Sessions) inTx(ctx context.Context, write func(*pgx.Conn) error) error {
	for attempt := 1; ; attempt++ {
		err := s.inTxOnce(ctx, write)
		if !pgdb.Retryable(err) {
			return err
		}
		if attempt == pgdb.TxAttempts {
			return fmt.Errorf("%w after %d attempts: %w", domain.ErrConflict, attempt, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 5 * time.Millisecond):
		}
	}
}

func (s *Sessions) inTxOnce(ctx context.Context, write func(*pgx.Conn) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire a connection: %w", err)
	}
	// The pool destroys a connection released inside a transaction, so
	// even a failed ROLLBACK cannot leave one open.
	defer c.Release()
	conn := c.Conn()
	err = write(conn)
	if err != nil && !conn.IsClosed() && conn.PgConn().TxStatus() != 'I' {
		// Roll back even when ctx is what ended the write: the row locks
		// must not outlive the call.
		if _, rbErr := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rbErr != nil {
			err = errors.Join(err, fmt.Errorf("roll back: %w", rbErr))
		}
	}
	return err
}

// read sends BEGIN and the locking reads queue adds, in one round trip, and
// hands their results to scan, which reads them in order.
func read(ctx context.Context, conn *pgx.Conn, queue func(*pgx.Batch), scan func(pgx.BatchResults) error) error {
	var b pgx.Batch
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	queue(&b)
	br := conn.SendBatch(ctx, &b)
	_, err := br.Exec()
	if err != nil {
		err = fmt.Errorf("begin transaction: %w", err)
	} else {
		err = scan(br)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}
