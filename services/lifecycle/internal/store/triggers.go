package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

var _ app.TriggerRepository = (*Sessions)(nil)

// The armed watchers of the session being locked: a transition that fires
// fire_ao_event_triggers decides from them. Arming a watcher locks the
// watched session FOR KEY SHARE, which waits for this lock, so none is
// armed behind the decision's back.
const watchingColumns = `SELECT id, session_id, states FROM wake_triggers
	WHERE kind = 'session_state' AND status = 'armed' AND watched_session_id = `

var (
	watchingByID   = watchingColumns + `$1 ORDER BY id`
	watchingBySlug = watchingColumns + `(SELECT id FROM sessions WHERE slug = $1) ORDER BY id`
)

func scanWatching(br pgx.BatchResults) ([]domain.Watch, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []domain.Watch
	for rows.Next() {
		var (
			w      domain.Watch
			states []string
		)
		if err := rows.Scan(&w.TriggerID, &w.SessionID, &states); err != nil {
			return nil, err
		}
		if w.States, err = parseStates(states); err != nil {
			return nil, fmt.Errorf("watcher #%d: %w", w.TriggerID, err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

func parseStates(words []string) ([]domain.Status, error) {
	out := make([]domain.Status, len(words))
	for i, w := range words {
		st, err := domain.ParseStatus(w)
		if err != nil {
			return nil, err
		}
		out[i] = st
	}
	return out, nil
}

func stateWords(states []domain.Status) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = s.String()
	}
	return out
}

const triggerColumns = `id, session_id, kind, fire_at, COALESCE(watched_session_id, 0), states, prompt, source,
	status, fired_state, created_at, fired_at, cancelled_at, timezone`

func scanTrigger(row pgx.Row) (domain.Trigger, error) {
	var (
		t          domain.Trigger
		fireAt     *time.Time
		states     []string
		firedState *string
	)
	if err := row.Scan(&t.ID, &t.SessionID, &t.Kind, &fireAt, &t.WatchedSessionID, &states, &t.Prompt, &t.Source,
		&t.Status, &firedState, &t.CreatedAt, &t.FiredAt, &t.CancelledAt, &t.Timezone); err != nil {
		return domain.Trigger{}, err
	}
	var err error
	if t.States, err = parseStates(states); err != nil {
		return domain.Trigger{}, fmt.Errorf("trigger #%d: %w", t.ID, err)
	}
	if firedState != nil {
		st, err := domain.ParseStatus(*firedState)
		if err != nil {
			return domain.Trigger{}, fmt.Errorf("trigger #%d: %w", t.ID, err)
		}
		t.FiredState = &st
	}
	if fireAt != nil {
		t.FireAt = fireAt.UTC()
	}
	t.CreatedAt = t.CreatedAt.UTC()
	for _, p := range []*time.Time{t.FiredAt, t.CancelledAt} {
		if p != nil {
			*p = p.UTC()
		}
	}
	return t, nil
}

// The session's own armed one-time wake-ups, read after its lock: what a
// Pause Until supersedes.
const oneTimeArmedColumns = `SELECT COALESCE(array_agg(w.id ORDER BY w.id), '{}') FROM wake_triggers w
	WHERE w.kind = 'one_time' AND w.status = 'armed' AND w.session_id = `

var (
	oneTimeArmedByID   = oneTimeArmedColumns + `$1`
	oneTimeArmedBySlug = oneTimeArmedColumns + `(SELECT id FROM sessions WHERE slug = $1)`
)

// Arm implements app.TriggerRepository.
func (s *Sessions) Arm(ctx context.Context, ref domain.SessionRef, watched int64,
	decide func(domain.Session, domain.Wakes, app.ArmingRead) (app.Change, error),
) (app.Change, error) {
	var read app.ArmingRead
	also := lockedRead{
		queue: func(b *pgx.Batch) {
			b.Queue(`SELECT nextval('wake_triggers_id_seq')`)
			if ref.Slug != "" {
				b.Queue(oneTimeArmedBySlug, ref.Slug)
			} else {
				b.Queue(oneTimeArmedByID, ref.ID)
			}
			if watched > 0 {
				b.Queue(`SELECT status FROM sessions WHERE id = $1 FOR KEY SHARE`, watched)
			}
		},
		scan: func(br pgx.BatchResults) error {
			read = app.ArmingRead{}
			if err := br.QueryRow().Scan(&read.TriggerID); err != nil {
				return fmt.Errorf("draw a trigger id: %w", err)
			}
			if err := br.QueryRow().Scan(&read.OneTimeArmed); err != nil {
				return fmt.Errorf("read the armed wake-ups of session %s: %w", ref, err)
			}
			if watched > 0 {
				var st domain.Status
				err := br.QueryRow().Scan(&st)
				switch {
				case errors.Is(err, pgx.ErrNoRows):
				case err != nil:
					return fmt.Errorf("lock watched session %d: %w", watched, err)
				default:
					read.WatchedStatus = &st
				}
			}
			return nil
		},
	}
	return s.update(ctx, ref, also, func(cur domain.Session, wakes domain.Wakes) (app.Change, error) {
		return decide(cur, wakes, read)
	})
}

// WithTrigger implements app.TriggerRepository.
func (s *Sessions) WithTrigger(ctx context.Context, ref domain.SessionRef, triggerID int64,
	decide func(domain.Session, domain.Wakes, domain.Trigger) (app.Change, error),
) (app.Change, error) {
	var t *domain.Trigger
	also := lockedRead{
		queue: func(b *pgx.Batch) {
			b.Queue(`SELECT `+triggerColumns+` FROM wake_triggers WHERE id = $1 FOR UPDATE`, triggerID)
		},
		scan: func(br pgx.BatchResults) error {
			got, err := scanTrigger(br.QueryRow())
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				t = nil
			case err != nil:
				return fmt.Errorf("read trigger #%d: %w", triggerID, err)
			default:
				t = &got
			}
			return nil
		},
	}
	return s.update(ctx, ref, also, func(cur domain.Session, wakes domain.Wakes) (app.Change, error) {
		if t == nil || t.SessionID != cur.ID {
			return app.Change{}, fmt.Errorf("session %d has no trigger #%d; list its triggers for their ids: %w",
				cur.ID, triggerID, domain.ErrNotFound)
		}
		return decide(cur, wakes, *t)
	})
}

// Triggers implements app.TriggerRepository.
func (s *Sessions) Triggers(ctx context.Context, f app.TriggerFilter) ([]domain.Trigger, error) {
	where := []string{`status = 'armed'`}
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.SessionID > 0 {
		add("session_id = $%d", f.SessionID)
	}
	if f.WatchedSessionID > 0 {
		add("watched_session_id = $%d", f.WatchedSessionID)
	}
	if f.Kind != "" {
		add("kind = $%d", string(f.Kind))
	}
	args = append(args, f.Limit)
	rows, err := s.pool.Query(ctx, `SELECT `+triggerColumns+` FROM wake_triggers WHERE `+strings.Join(where, " AND ")+
		fmt.Sprintf(` ORDER BY fire_at NULLS LAST, id LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Trigger, error) { return scanTrigger(r) })
	if err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	return out, nil
}

// WakesOf implements app.TriggerRepository: one query for every id.
func (s *Sessions) WakesOf(ctx context.Context, ids []int64) (map[int64]domain.Wakes, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT session_id,
			count(*) FILTER (WHERE kind = 'one_time'),
			count(*) FILTER (WHERE kind = 'session_state'),
			max(fire_at) FILTER (WHERE kind = 'one_time')
		FROM wake_triggers WHERE session_id = ANY($1) AND status = 'armed'
		GROUP BY session_id`, ids)
	if err != nil {
		return nil, fmt.Errorf("read armed wake-ups: %w", err)
	}
	defer rows.Close()
	out := map[int64]domain.Wakes{}
	for rows.Next() {
		var (
			id     int64
			w      domain.Wakes
			latest *time.Time
		)
		if err := rows.Scan(&id, &w.OneTime, &w.Watchers, &latest); err != nil {
			return nil, fmt.Errorf("read armed wake-ups: %w", err)
		}
		if latest != nil {
			w.LatestOneTime = latest.UTC()
		}
		out[id] = w
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read armed wake-ups: %w", err)
	}
	return out, nil
}

// planTriggerEffects carries out the trigger effects of a transition in its
// own transaction: a deliberate resume cancels every wake-up the session
// armed for itself, one-time wakes and watchers alike (a recovery resume
// keeps them all); fire_ao_event_triggers moves the
// armed watchers of the session that wait for its new state to firing, each
// announced due to the triggers' timers; the archive's clean-up cancels the
// rest, on each watcher's own timeline.
func (s *Sessions) planTriggerEffects(w *writes, cur domain.Session, wakes domain.Wakes, out *domain.Outcome) error {
	at := out.Session.UpdatedAt
	fired := map[int64]bool{}
	for _, e := range out.Effects {
		switch e := e.(type) {
		case domain.CancelWakes:
			if !e.Preserve {
				// Every kind: a watcher left armed would later wake a
				// session that its resume already made busy.
				w.queue(func(err error) error {
					return fmt.Errorf("cancel the pending wake-ups of session %d: %w", cur.ID, err)
				}, `
					UPDATE wake_triggers SET status = 'cancelled', cancelled_at = $2
					WHERE session_id = $1 AND status = 'armed'`, cur.ID, at)
			}
		case domain.FireTriggers:
			state, due := domain.WatchesFired(e, wakes.Watching)
			if len(due) == 0 {
				continue
			}
			ids := make([]int64, len(due))
			for i, d := range due {
				ids[i], fired[d.TriggerID] = d.TriggerID, true
			}
			w.queue(func(err error) error { return fmt.Errorf("fire the watchers of session %d: %w", cur.ID, err) }, `
				UPDATE wake_triggers SET status = 'firing', fired_state = $2
				WHERE id = ANY($1) AND status = 'armed'`, ids, state.String())
			for _, d := range due {
				st := state
				t := domain.Trigger{ID: d.TriggerID, SessionID: d.SessionID, Kind: domain.KindSessionState, FireAt: at,
					WatchedSessionID: cur.ID, States: d.States, Source: domain.SourceWatch, Status: domain.TriggerFiring, FiredState: &st}
				if _, err := w.announce(s.codec, domain.TriggerDueEvent{Trigger: t}); err != nil {
					return err
				}
			}
		case domain.CleanupWatchers:
			var left []domain.Watch
			for _, d := range wakes.Watching {
				if !fired[d.TriggerID] {
					left = append(left, d)
				}
			}
			planWatchersGone(w, cur.ID, left, at, "was archived")
		}
	}
	return nil
}

// planWatchersGone cancels the watchers of a session that is gone
// (archived, deleted), each with a line on the timeline of the session it
// was to wake.
func planWatchersGone(w *writes, id int64, watchers []domain.Watch, at time.Time, why string) {
	if len(watchers) == 0 {
		return
	}
	ids := make([]int64, len(watchers))
	for i, d := range watchers {
		ids[i] = d.TriggerID
		w.timeline(d.SessionID, at, domain.TimelineEntry{Kind: domain.TimelineNote, Message: fmt.Sprintf(
			"[Trigger] watcher #%d cancelled: session #%d %s", d.TriggerID, id, why)})
	}
	w.queue(func(err error) error { return fmt.Errorf("cancel the watchers of session %d: %w", id, err) }, `
		UPDATE wake_triggers SET status = 'cancelled', cancelled_at = $2
		WHERE id = ANY($1) AND status = 'armed'`, ids, at)
}

// planArming queues a trigger's arming: the wake-ups a Pause Until
// supersedes cancelled, the trigger inserted, what it did to the session, and its
// announcement to the triggers' timers (one-time triggers: a watcher's
// timer starts when it is due).
func (s *Sessions) planArming(w *writes, cur domain.Session, wakes domain.Wakes, a *app.Arming) error {
	t := a.Trigger
	if len(a.Supersedes) > 0 {
		// Read under the session's lock, so none fired or was armed since.
		w.queue(func(err error) error { return fmt.Errorf("supersede the wake-ups of session %d: %w", cur.ID, err) }, `
			UPDATE wake_triggers SET status = 'cancelled', cancelled_at = $3
			WHERE id = ANY($2) AND session_id = $1 AND kind = 'one_time' AND status = 'armed'`, cur.ID, a.Supersedes, a.At)
	}
	var fireAt *time.Time
	if !t.FireAt.IsZero() {
		fireAt = &t.FireAt
	}
	var watched *int64
	if t.WatchedSessionID > 0 {
		watched = &t.WatchedSessionID
	}
	w.queue(func(err error) error { return fmt.Errorf("arm trigger #%d of session %d: %w", t.ID, cur.ID, err) }, `
		INSERT INTO wake_triggers (id, session_id, kind, fire_at, watched_session_id, states, prompt, source, status, created_at, timezone)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'armed', $9, $10)`,
		t.ID, cur.ID, string(t.Kind), fireAt, watched, stateWords(t.States), t.Prompt, string(t.Source), t.CreatedAt, timezoneOf(t))
	if a.Outcome != nil {
		if err := s.planTransition(w, cur, wakes, a.Outcome); err != nil {
			return err
		}
		a.Session = a.Outcome.Session
	} else {
		w.timeline(cur.ID, a.At, a.Timeline...)
		a.Session = cur
		a.Session.Version = cur.Version + 1
		w.version(cur.ID, a.Session.Version, nil)
	}
	if t.Kind == domain.KindOneTime {
		if _, err := w.announce(s.codec, domain.TriggerArmedEvent{Trigger: t}); err != nil {
			return err
		}
	}
	return nil
}

// planTriggerMove queues a trigger's new status, its session's lines and
// markers, and the session's next version.
func (s *Sessions) planTriggerMove(w *writes, cur domain.Session, m *app.TriggerMove) error {
	t := m.Trigger
	w.queue(func(err error) error { return fmt.Errorf("move trigger #%d to %s: %w", t.ID, t.Status, err) }, `
		UPDATE wake_triggers SET status = $2, fired_at = $3, cancelled_at = $4 WHERE id = $1`,
		t.ID, string(t.Status), t.FiredAt, t.CancelledAt)
	w.timeline(cur.ID, m.At, m.Timeline...)
	next := cur
	next.Version = cur.Version + 1
	if m.Markers == nil {
		w.version(cur.ID, next.Version, nil)
	} else {
		markers, err := encodeMarkers(*m.Markers)
		if err != nil {
			return fmt.Errorf("encode markers of session %d: %w", cur.ID, err)
		}
		next.Markers = *m.Markers
		w.version(cur.ID, next.Version, markers)
	}
	if m.AsksFirstTurn {
		if _, err := w.announce(s.codec, domain.FirstTurnAsked{Session: next}); err != nil {
			return err
		}
	}
	return nil
}

// timezoneOf is the zone stored with t: a watcher has no time, so none
// of its own; the column's default names UTC.
func timezoneOf(t domain.Trigger) string {
	if t.Timezone == "" {
		return domain.DefaultWakeTimezone
	}
	return t.Timezone
}
