package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// StaleSeals returns, by session, the archive attempt holding each seal
// placed before sealedBefore: an attempt that should long have committed or
// unsealed, whose caller may have died in between (see the archive
// protocol). Retirement's own seal (RetiredSeal) is never stale.
func (s *Messages) StaleSeals(ctx context.Context, sealedBefore time.Time) (map[int64]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT session_id, sealed_by FROM session_queues
		WHERE sealed_at < $1 AND sealed_by <> $2`, sealedBefore, RetiredSeal)
	if err != nil {
		return nil, fmt.Errorf("list seals placed before %s: %w", sealedBefore.Format(time.RFC3339), err)
	}
	type seal struct {
		SessionID int64
		SealedBy  string
	}
	seals, err := pgx.CollectRows(rows, pgx.RowToStructByPos[seal])
	if err != nil {
		return nil, fmt.Errorf("list seals placed before %s: %w", sealedBefore.Format(time.RFC3339), err)
	}
	held := make(map[int64]string, len(seals))
	for _, s := range seals {
		held[s.SessionID] = s.SealedBy
	}
	return held, nil
}
