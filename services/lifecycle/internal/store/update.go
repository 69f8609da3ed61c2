package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// Create implements app.SessionRepository: BEGIN, the session's id and the
// parent's lock in one round trip; the row and its announcement with COMMIT
// in the other.
func (s *Sessions) Create(ctx context.Context, parentID *int64,
	build func(parent *domain.Session) (domain.Session, error),
) (domain.Session, error) {
	var created domain.Session
	guard := guardOf(ctx)
	err := s.inTx(ctx, func(conn *pgx.Conn) error {
		var (
			id     int64
			parent *domain.Session
		)
		err := read(ctx, conn, func(b *pgx.Batch) {
			// The id is drawn first so the announcement, written in the same
			// batch as the row, can carry it.
			b.Queue(`SELECT nextval('sessions_id_seq')`)
			if parentID != nil {
				// FOR KEY SHARE: the parent cannot be deleted until we
				// commit; a transition or edit of it (FOR UPDATE) waits
				// only for this commit.
				b.Queue(`SELECT `+sessionColumns+` FROM sessions WHERE id = $1 FOR KEY SHARE`, *parentID)
			}
			guard.queue(b)
		}, func(br pgx.BatchResults) error {
			if err := br.QueryRow().Scan(&id); err != nil {
				return fmt.Errorf("draw a session id: %w", err)
			}
			if parentID != nil {
				p, err := scanSession(br.QueryRow())
				switch {
				case err == nil:
					parent = &p
				case !errors.Is(err, pgx.ErrNoRows):
					return fmt.Errorf("load parent session %d: %w", *parentID, err)
				}
			}
			return guard.check(br)
		})
		if err != nil {
			return err
		}
		sess, err := build(parent)
		if err != nil {
			return err
		}
		sess.ID = id
		w := newWrites(ctx)
		if err := w.insert(sess); err != nil {
			return err
		}
		if _, err := w.announce(s.codec, domain.SessionCreated{Session: sess}); err != nil {
			return err
		}
		if err := w.commit(ctx, conn, s.logger); err != nil {
			return err
		}
		created = sess
		return nil
	})
	if err != nil {
		return domain.Session{}, err
	}
	s.signal.Notify()
	return created, nil
}

// Queries that lock a session for a decision, with its armed wake-ups
// counted under the lock: a wake-up being armed for it (which takes a key
// share on the row) waits for the decision to commit.
var (
	lockedColumns = sessionColumns + `,
		(SELECT count(*) FROM wake_triggers w WHERE w.session_id = sessions.id AND w.status = 'armed' AND w.kind = 'one_time'),
		(SELECT count(*) FROM wake_triggers w WHERE w.session_id = sessions.id AND w.status = 'armed' AND w.kind = 'session_state'),
		(SELECT max(fire_at) FROM wake_triggers w WHERE w.session_id = sessions.id AND w.status = 'armed' AND w.kind = 'one_time')`
	lockByID   = `SELECT ` + lockedColumns + ` FROM sessions WHERE id = $1 FOR UPDATE`
	lockBySlug = `SELECT ` + lockedColumns + ` FROM sessions WHERE slug = $1 FOR UPDATE`
)

// Update implements app.SessionRepository: BEGIN and the lock in one round
// trip; the decided writes with COMMIT in the other.
func (s *Sessions) Update(ctx context.Context, ref domain.SessionRef,
	decide func(domain.Session, domain.Wakes) (app.Change, error),
) (app.Change, error) {
	return s.update(ctx, ref, lockedRead{}, decide)
}

// Deliver implements app.SessionRepository: Update, reading the record of
// deliveryID after the session's lock, so a delivery that committed while
// this one waited for the lock is seen.
func (s *Sessions) Deliver(ctx context.Context, id int64, deliveryID string,
	decide func(domain.Session, domain.Wakes, *app.DeliveryRecord) (app.Change, error),
) (app.Change, error) {
	var prior *app.DeliveryRecord
	also := lockedRead{
		queue: func(b *pgx.Batch) {
			b.Queue(`SELECT session_id, job_id FROM deliveries WHERE delivery_id = $1`, deliveryID)
		},
		scan: func(br pgx.BatchResults) error {
			r := app.DeliveryRecord{ID: deliveryID}
			err := br.QueryRow().Scan(&r.SessionID, &r.JobID)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				prior = nil
			case err != nil:
				return fmt.Errorf("read delivery %q: %w", deliveryID, err)
			default:
				prior = &r
			}
			return nil
		},
	}
	return s.update(ctx, domain.SessionRef{ID: id}, also, func(cur domain.Session, wakes domain.Wakes) (app.Change, error) {
		return decide(cur, wakes, prior)
	})
}

// UpdateOnce implements app.SessionRepository: Update, reading the record
// of the transition applied under key after the session's lock, so one that
// committed while this call waited for the lock is seen.
func (s *Sessions) UpdateOnce(ctx context.Context, ref domain.SessionRef, key string,
	decide func(domain.Session, domain.Wakes, *app.TransitionRecord) (app.Change, error),
) (app.Change, error) {
	var prior *app.TransitionRecord
	also := lockedRead{
		queue: func(b *pgx.Batch) {
			b.Queue(`SELECT session_id, event, from_status FROM applied_transitions WHERE idempotency_key = $1`, key)
		},
		scan: func(br pgx.BatchResults) error {
			r := app.TransitionRecord{Key: key}
			err := br.QueryRow().Scan(&r.SessionID, &r.Event, &r.From)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				prior = nil
			case err != nil:
				return fmt.Errorf("read the transition applied under key %q: %w", key, err)
			default:
				prior = &r
			}
			return nil
		},
	}
	return s.update(ctx, ref, also, func(cur domain.Session, wakes domain.Wakes) (app.Change, error) {
		return decide(cur, wakes, prior)
	})
}

// lockedRead is what a write reads besides the session and its wake-ups:
// queue adds statements that run once the session is locked, scan reads
// their results in order. The zero value reads nothing.
type lockedRead struct {
	queue func(*pgx.Batch)
	scan  func(pgx.BatchResults) error
}

func (s *Sessions) update(ctx context.Context, ref domain.SessionRef, also lockedRead,
	decide func(domain.Session, domain.Wakes) (app.Change, error),
) (app.Change, error) {
	var committed app.Change
	guard := guardOf(ctx)
	err := s.inTx(ctx, func(conn *pgx.Conn) error {
		var (
			cur   domain.Session
			wakes domain.Wakes
		)
		err := read(ctx, conn, func(b *pgx.Batch) {
			if ref.Slug != "" {
				b.Queue(lockBySlug, ref.Slug)
				b.Queue(watchingBySlug, ref.Slug)
			} else {
				b.Queue(lockByID, ref.ID)
				b.Queue(watchingByID, ref.ID)
			}
			// After the session's lock, as revocation takes them.
			guard.queue(b)
			if also.queue != nil {
				also.queue(b)
			}
		}, func(br pgx.BatchResults) error {
			var err error
			if cur, wakes, err = scanLockedWakes(br, ref); err != nil {
				return err
			}
			if wakes.Watching, err = scanWatching(br); err != nil {
				return fmt.Errorf("read the watchers of session %s: %w", ref, err)
			}
			if err := guard.check(br); err != nil {
				return err
			}
			if also.scan != nil {
				return also.scan(br)
			}
			return nil
		})
		if err != nil {
			return err
		}
		c, err := decide(cur, wakes)
		if err != nil {
			return err
		}
		w := newWrites(ctx)
		if err := s.plan(&w, cur, wakes, &c); err != nil {
			return err
		}
		if err := w.commit(ctx, conn, s.logger); err != nil {
			return err
		}
		committed = c
		return nil
	})
	switch {
	case err != nil:
		return app.Change{}, err
	case committed.Refused != nil:
		return app.Change{}, committed.Refused.Err
	}
	if committed.Transitioned != nil || committed.Edited != nil || committed.Deleted || committed.Delivered != nil ||
		committed.Armed != nil || committed.Triggered != nil {
		s.signal.Notify()  // it announced something
		s.changed.notify() // it may have written a "transition" entry
	}
	return committed, nil
}

// plan queues the writes of c, decided from cur, and sets the new version
// on the session it carries.
func (s *Sessions) plan(w *writes, cur domain.Session, wakes domain.Wakes, c *app.Change) error {
	set := 0
	for _, ok := range []bool{c.Transitioned != nil, c.Edited != nil, c.Deleted, c.Refused != nil,
		c.Delivered != nil, c.Marked != nil, c.Armed != nil, c.Triggered != nil, c.Nothing} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("change of session %d sets %d kinds of change; exactly one is expected", cur.ID, set)
	}
	switch {
	case c.Transitioned != nil:
		if c.TransitionKey != "" {
			w.appliedTransition(c.TransitionKey, cur.ID, c.Transitioned)
		}
		return s.planTransition(w, cur, wakes, c.Transitioned)
	case c.Armed != nil:
		return s.planArming(w, cur, wakes, c.Armed)
	case c.Triggered != nil:
		return s.planTriggerMove(w, cur, c.Triggered)
	case c.Delivered != nil:
		out := &c.Delivered.Outcome
		// Before the transition's writes, which end with the flags'
		// savepoint: a failure of the flags rolls back to it alone.
		if out.Session.Goal != cur.Goal {
			w.goal(cur.ID, out.Session.Goal)
		}
		w.delivery(c.Delivered.ID, cur.ID, out.Session.Markers.RunningJobID)
		return s.planTransition(w, cur, wakes, out)
	case c.Marked != nil:
		c.Marked.Session.Version = cur.Version + 1
		if err := w.marked(cur.ID, c.Marked.Session); err != nil {
			return err
		}
		w.timeline(cur.ID, c.Marked.At, c.Marked.Timeline...)
	case c.Edited != nil:
		c.Edited.Session.Version = cur.Version + 1
		if err := w.edit(cur.ID, c.Edited.Session); err != nil {
			return err
		}
		w.timeline(cur.ID, c.Edited.Session.UpdatedAt, c.Edited.Note)
		if _, err := w.announce(s.codec, domain.SessionEdited{Session: c.Edited.Session}); err != nil {
			return err
		}
	case c.Deleted:
		// Other sessions' watchers of it would wait for ever (and read as
		// asleep on purpose): cancelled, on their timelines.
		planWatchersGone(w, cur.ID, wakes.Watching, time.Now().UTC(), "was deleted")
		w.delete(cur.ID)
		// The credentials are kept, revoked, so a later call is told why.
		w.revokeAllOfDeleted(cur.ID, domain.RevokedByDelete(cur.ID))
		if _, err := w.announce(s.codec, domain.SessionDeleted{SessionID: cur.ID}); err != nil {
			return err
		}
	case c.Refused != nil:
		w.timeline(cur.ID, c.Refused.At, domain.RefusalLine(c.Refused.Err, c.Refused.By))
	}
	return nil
}

// planTransition queues a state-machine outcome: the trigger effects
// lifecycle carries out itself, the columns a transition owns, its
// timeline lines, the revocations an archive makes, its announcements and
// stream entries and, last, the experimental flags.
func (s *Sessions) planTransition(w *writes, cur domain.Session, wakes domain.Wakes, out *domain.Outcome) error {
	out.Session.Version = cur.Version + 1
	// Before the row: a change of wake_triggers moves the owning session's
	// version (migration 0005), and the row sets this session's.
	if err := s.planTriggerEffects(w, cur, wakes, out); err != nil {
		return err
	}
	if err := w.transition(cur.ID, out.Session); err != nil {
		return err
	}
	if len(out.MetadataRemoved) > 0 {
		w.removeMetadata(cur.ID, out.MetadataRemoved)
	}
	if out.Session.SchedulingClass != cur.SchedulingClass {
		// The Spot Queue makes the session spot with its sleep, in one
		// commit (domain.PauseIntoSpotQueue).
		w.queue(func(err error) error { return fmt.Errorf("write the scheduling class of session %d: %w", cur.ID, err) },
			`UPDATE sessions SET scheduling_class = $2 WHERE id = $1`, cur.ID, out.Session.SchedulingClass)
	}
	if out.SupersedeOneTimeWakes {
		// Read under the session's lock (wakes), so none fired or was
		// armed since.
		w.queue(func(err error) error { return fmt.Errorf("supersede the wake-ups of session %d: %w", cur.ID, err) }, `
			UPDATE wake_triggers SET status = 'cancelled', cancelled_at = $2
			WHERE session_id = $1 AND kind = 'one_time' AND status = 'armed'`, cur.ID, out.Session.UpdatedAt)
	}
	w.timeline(cur.ID, out.Session.UpdatedAt, out.Timeline...)
	if out.Session.Status == domain.StatusArchived && cur.Status != domain.StatusArchived {
		// An archived session's agent acts no more: its credentials
		// end with the archive (and stay revoked if it is restored).
		w.revokeAll(cur.ID, out.Session.UpdatedAt, domain.RevokedByArchive(cur.ID))
	}
	announced, err := w.announce(s.codec, domain.SessionTransitioned{Session: out.Session, Outcome: *out})
	if err != nil {
		return err
	}
	if err := w.stream(s.codec, cur.ID, announced, out.Effects); err != nil {
		return err
	}
	for _, e := range out.Effects {
		if _, ok := e.(domain.RecordFlags); ok {
			w.flags(cur.ID, out.Session.UpdatedAt, s.codec.EffectName(e))
			break
		}
	}
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
