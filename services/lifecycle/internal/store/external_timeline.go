package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/inbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

var _ app.ExternalTimelineWriter = (*Sessions)(nil)

// AppendExternalLines implements app.ExternalTimelineWriter in one
// transaction: the inbox claim, then one INSERT of every line. The join
// takes each session FOR KEY SHARE, so a concurrent delete either waits for
// the lines or wins, and then its lines are skipped rather than failing
// the event for ever.
func (s *Sessions) AppendExternalLines(ctx context.Context, eventID, topic string, at time.Time, lines []domain.ExternalTimelineLine) (bool, error) {
	ids := make([]int64, len(lines))
	kinds := make([]string, len(lines))
	messages := make([]string, len(lines))
	for i, l := range lines {
		ids[i], kinds[i], messages[i] = l.SessionID, string(l.Entry.Kind), l.Entry.Message
	}
	var applied bool
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		var err error
		if applied, err = inbox.Claim(ctx, tx, eventID, topic); err != nil || !applied {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO session_timeline (session_id, kind, message, created_at)
			SELECT l.session_id, l.kind, l.message, $4
			FROM unnest($1::bigint[], $2::text[], $3::text[]) WITH ORDINALITY AS l(session_id, kind, message, n)
			JOIN sessions s ON s.id = l.session_id
			ORDER BY l.n
			FOR KEY SHARE OF s`, ids, kinds, messages, at)
		if err != nil {
			return fmt.Errorf("append %d timeline lines: %w", len(lines), err)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return applied, nil
}
