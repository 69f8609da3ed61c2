package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ExpiredClaims lists the sessions holding a claim whose lease ended
// before `before`: its holder died holding it (QU-20). Read over the
// partial index of processing messages, one per session.
func (s *Messages) ExpiredClaims(ctx context.Context, before time.Time) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT session_id FROM enqueued_messages
		WHERE status = 'processing' AND lease_expires_at < $1 ORDER BY session_id`, before)
	if err != nil {
		return nil, fmt.Errorf("list the claims expired before %s: %w", before.Format(time.RFC3339), err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("list the claims expired before %s: %w", before.Format(time.RFC3339), err)
	}
	return ids, nil
}

// ReleaseExpiredClaim puts the session's message back in line if its
// claim's lease ended before `before`, under the session's queue lock as a
// claim takes it (noClaimInFlight does the same for the next deliverer).
// False when there was none: settled, released or claimed afresh since.
func (s *Messages) ReleaseExpiredClaim(ctx context.Context, sessionID int64, before time.Time) (bool, error) {
	var released bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, sessionID, "FOR NO KEY UPDATE"); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE enqueued_messages
			SET status = 'pending', claimed_at = NULL, lease_id = NULL, lease_expires_at = NULL
			WHERE session_id = $1 AND status = 'processing' AND lease_expires_at < $2`, sessionID, before)
		if err != nil {
			return fmt.Errorf("put session %d's expired claim back in line: %w", sessionID, err)
		}
		released = tag.RowsAffected() > 0
		return nil
	})
	return released, err
}
