package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// Update implements app.SessionRepository: it locks the session, applies
// change and saves the result with its timeline note and announcement.
func (s *Sessions) Update(ctx context.Context, ref domain.SessionRef,
	change func(domain.Session) (domain.Session, domain.TimelineEntry, error),
) (domain.Session, error) {
	var updated domain.Session
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		cur, _, err := lockWithWakes(ctx, tx, ref)
		if err != nil {
			return err
		}
		next, note, err := change(cur)
		if err != nil {
			return err
		}
		next.Version = cur.Version + 1
		var w writes
		if err := w.save(next); err != nil {
			return err
		}
		w.timeline(cur.ID, next.UpdatedAt, []domain.TimelineEntry{note})
		if err := w.announce(s.encode, domain.SessionTransitioned{Session: next}); err != nil {
			return err
		}
		if err := w.send(ctx, tx); err != nil {
			return err
		}
		updated = next
		return nil
	})
	return updated, err
}

// Delete implements app.SessionRepository. Its timeline, event stream and
// flags go with it; children keep existing with no recorded parent.
func (s *Sessions) Delete(ctx context.Context, ref domain.SessionRef) error {
	return pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		cur, _, err := lockWithWakes(ctx, tx, ref)
		if err != nil {
			return err
		}
		var w writes
		w.queue(func(err error) error { return fmt.Errorf("delete session %d: %w", cur.ID, err) },
			`DELETE FROM sessions WHERE id = $1`, cur.ID)
		if err := w.announce(s.encode, domain.SessionDeleted{SessionID: cur.ID}); err != nil {
			return err
		}
		return w.send(ctx, tx)
	})
}

const settingProvenanceViaMCP = "provenance_via_mcp_enabled"

// Settings implements app.SettingsRepository.
func (s *Sessions) Settings(ctx context.Context) (domain.Settings, error) {
	return readSettings(ctx, s.pool)
}

func readSettings(ctx context.Context, db pgdb.DBTX) (domain.Settings, error) {
	st := domain.DefaultSettings
	var v bool
	err := db.QueryRow(ctx, `SELECT value::boolean FROM app_settings WHERE key = $1`, settingProvenanceViaMCP).Scan(&v)
	switch {
	case err == nil:
		st.ProvenanceViaMCPEnabled = v
	case !errors.Is(err, pgx.ErrNoRows):
		return domain.Settings{}, fmt.Errorf("read settings: %w", err)
	}
	return st, nil
}

// UpdateSettings implements app.SettingsRepository.
func (s *Sessions) UpdateSettings(ctx context.Context, provenanceViaMCP *bool) (domain.Settings, error) {
	if provenanceViaMCP != nil {
		if _, err := s.pool.Exec(ctx, `
			INSERT INTO app_settings (key, value, updated_at) VALUES ($1, to_jsonb($2::boolean), now())
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
			settingProvenanceViaMCP, *provenanceViaMCP); err != nil {
			return domain.Settings{}, fmt.Errorf("update settings: %w", err)
		}
	}
	return s.Settings(ctx)
}

// recordFlags writes the settings this session is about to run with, in
// one round trip. It is bookkeeping: under a savepoint, so a failure rolls
// back only itself and never the transition, and is logged rather than
// returned.
func (s *Sessions) recordFlags(ctx context.Context, conn *pgx.Conn, sess domain.Session) {
	var b pgx.Batch
	b.Queue(`SAVEPOINT record_flags`)
	b.Queue(`
		INSERT INTO session_experimental_flags (session_id, setting, start_value, end_value, started_at, ended_at)
		SELECT $1, $2, v, v, $4, $4
		FROM (SELECT COALESCE((SELECT value FROM app_settings WHERE key = $2), to_jsonb($3::boolean)) AS v) setting
		ON CONFLICT (session_id, setting) DO UPDATE SET end_value = EXCLUDED.end_value, ended_at = EXCLUDED.ended_at`,
		sess.ID, settingProvenanceViaMCP, domain.DefaultSettings.ProvenanceViaMCPEnabled, sess.UpdatedAt)
	b.Queue(`RELEASE SAVEPOINT record_flags`)
	err := conn.SendBatch(ctx, &b).Close()
	if err == nil {
		return
	}
	if _, rbErr := conn.Exec(ctx, `ROLLBACK TO SAVEPOINT record_flags`); rbErr != nil {
		err = errors.Join(err, rbErr)
	}
	s.logger.WarnContext(ctx, "record experimental setting flags failed; the transition goes on",
		"session_id", sess.ID, "effect", domain.EffectRecordFlags, "error", err)
}

func hasEffect(out domain.Outcome, name string) bool {
	for _, e := range out.Effects {
		if e.Name == name {
			return true
		}
	}
	return false
}
