package devstack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DeadLettersQuery counts the outbox rows parked as undeliverable.
const DeadLettersQuery = "SELECT count(*) FROM outbox_messages WHERE dead_at IS NOT NULL"

// DeadLetters counts the dead letters in the service database at dbURL. A
// database without an outbox yet (not migrated), or whose outbox has no
// dead_at column (older schema), has none.
func DeadLetters(ctx context.Context, dbURL string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int64
	err = conn.QueryRow(ctx, DeadLettersQuery).Scan(&n)
	// 42P01 undefined_table, 42703 undefined_column.
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "42703") {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	return n, nil
}
