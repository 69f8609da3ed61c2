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
	var updated decided
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		locked, err := scanDecided(ref, tx.QueryRow(ctx, selectDecided(ref, "FOR UPDATE"), refArg(ref)))
		if err != nil {
			return err
		}
		cur := locked.session
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
		if err := w.announce(s.codec.Encode, domain.SessionEdited{Session: next}); err != nil {
			return err
		}
		if err := w.send(ctx, tx); err != nil {
			return err
		}
		updated = decided{session: next, wakes: locked.wakes}
		return nil
	})
	if err != nil {
		return domain.Session{}, err
	}
	s.signal.Notify()
	s.cache.put(updated)
	return updated.session, nil
}

// Delete implements app.SessionRepository. Its timeline and flags go with
// it; children keep existing with no recorded parent.
func (s *Sessions) Delete(ctx context.Context, ref domain.SessionRef) error {
	var id int64
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		locked, err := scanDecided(ref, tx.QueryRow(ctx, selectDecided(ref, "FOR UPDATE"), refArg(ref)))
		if err != nil {
			return err
		}
		id = locked.session.ID
		var w writes
		w.queue(func(err error) error { return fmt.Errorf("delete session %d: %w", id, err) },
			`DELETE FROM sessions WHERE id = $1`, id)
		if err := w.announce(s.codec.Encode, domain.SessionDeleted{SessionID: id}); err != nil {
			return err
		}
		return w.send(ctx, tx)
	})
	if err != nil {
		return err
	}
	s.signal.Notify()
	s.cache.forget(id)
	return nil
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
