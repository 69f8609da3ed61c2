package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
)

// writes collects a change's statements — the row, its timeline, its event
// stream, its outbox events — and sends them in one round trip: a
// transition's cost is round trips, not rows.
type writes struct {
	b    pgx.Batch
	wrap []func(error) error // how each statement's error is reported
}

func (w *writes) queue(wrap func(error) error, sql string, args ...any) {
	w.b.Queue(sql, args...)
	w.wrap = append(w.wrap, wrap)
}

// send runs the batch, reporting the first failure.
func (w *writes) send(ctx context.Context, tx pgx.Tx) error {
	if w.b.Len() == 0 {
		return nil
	}
	br := tx.SendBatch(ctx, &w.b)
	for i := range w.b.Len() {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			if i < len(w.wrap) && w.wrap[i] != nil {
				return w.wrap[i](err)
			}
			return err
		}
	}
	return br.Close()
}

// save queues the update of every mutable column of sess.
func (w *writes) save(sess domain.Session) error {
	markers, err := json.Marshal(sess.Markers)
	if err != nil {
		return fmt.Errorf("encode markers: %w", err)
	}
	md, err := json.Marshal(sess.CustomMetadata)
	if err != nil {
		return fmt.Errorf("encode custom_metadata: %w", err)
	}
	w.queue(func(err error) error { return interpretWrite(err, sess) }, `
		UPDATE sessions SET status = $2, markers = $3, elapsed_since = $4, archived_at = $5,
			archived_from = $6, trash_after = $7, updated_at = $8, version = version + 1,
			title = $9, slug = NULLIF($10, ''), goal = $11, scheduling_class = $12, precedence = $13,
			custom_metadata = $14, heartbeat_enabled = $15, heartbeat_interval_seconds = $16, notes = $17
		WHERE id = $1`,
		sess.ID, sess.Status, markers, sess.ElapsedSince, sess.ArchivedAt, sess.ArchivedFrom,
		sess.TrashAfter, sess.UpdatedAt, sess.Title, sess.Slug, sess.Goal, sess.SchedulingClass,
		sess.Precedence, md, sess.HeartbeatEnabled, sess.HeartbeatIntervalSeconds, sess.Notes)
	return nil
}

func (w *writes) timeline(sessionID int64, at time.Time, lines []domain.TimelineEntry) {
	for _, l := range lines {
		w.queue(func(err error) error { return fmt.Errorf("write timeline of session %d: %w", sessionID, err) },
			`INSERT INTO session_timeline (session_id, kind, message, created_at) VALUES ($1, $2, $3, $4)`,
			sessionID, l.Kind, l.Message, at)
	}
}

// announce queues the outbox events of facts.
func (w *writes) announce(encode func(domain.Fact) ([]outbox.Addressed, error), facts ...domain.Fact) error {
	for _, f := range facts {
		encoded, err := encode(f)
		if err != nil {
			return fmt.Errorf("encode %T: %w", f, err)
		}
		for _, a := range encoded {
			before := w.b.Len()
			outbox.Queue(&w.b, a.Subscribers, a.Event)
			for range w.b.Len() - before {
				w.wrap = append(w.wrap, func(err error) error { return fmt.Errorf("enqueue %s: %w", a.Event.Topic, err) })
			}
		}
	}
	return nil
}
