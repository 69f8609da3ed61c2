package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
)

// Transition implements app.SessionRepository.
//
// A transition's cost is round trips, so the common case takes one. The
// state it decides from comes from this process's cache, and the outcome is
// written by one statement conditional on the version it was decided from:
// the row, its timeline and its outbox events, or nothing. A miss, or an
// entry another writer made stale, costs one plain read and a retry. In this
// process transitions of one session queue on a lock; across processes the
// version check serializes them. Sessions never wait on one another.
func (s *Sessions) Transition(ctx context.Context, ref domain.SessionRef,
	decide func(domain.Session, domain.Wakes) (domain.Outcome, error),
) (domain.Outcome, error) {
	for range maxTransitionAttempts {
		out, err := s.transition(ctx, ref, decide)
		if !errors.Is(err, errStale) {
			return out, err
		}
	}
	return domain.Outcome{}, fmt.Errorf("session %s kept changing under %d attempts; retry: %w",
		ref, maxTransitionAttempts, domain.ErrConflict)
}

// maxTransitionAttempts bounds the re-reads of one transition: only writes
// from other processes can make it retry, and they are rare.
const maxTransitionAttempts = 8

func hasEffect(out domain.Outcome, name string) bool {
	for _, e := range out.Effects {
		if e.Name == name {
			return true
		}
	}
	return false
}

// errStale reports that the version a decision was made from had moved.
var errStale = errors.New("session changed since it was read")

func (s *Sessions) transition(ctx context.Context, ref domain.SessionRef,
	decide func(domain.Session, domain.Wakes) (domain.Outcome, error),
) (domain.Outcome, error) {
	id, known := s.cache.id(ref)
	var read *decided
	if !known {
		d, err := s.read(ctx, ref)
		if err != nil {
			return domain.Outcome{}, err
		}
		id, read = d.session.ID, &d
	}
	unlock := s.locks.lock(id)
	defer unlock()

	cur, ok := s.cache.get(id)
	if !ok {
		if read == nil {
			d, err := s.read(ctx, ref)
			if err != nil {
				return domain.Outcome{}, err
			}
			read = &d
		}
		cur = *read
	}
	out, err := decide(cur.session, cur.wakes)
	var refused *domain.TransitionError
	if errors.As(err, &refused) {
		// The refusal changed nothing; saying so on the timeline is what
		// lets "why didn't my pause work?" be answered from the session. It
		// is written only if the refusal was decided from the current state.
		if werr := s.writeRefusal(ctx, cur.session, refused); werr != nil {
			return domain.Outcome{}, werr
		}
		return domain.Outcome{}, err
	}
	if err != nil {
		return domain.Outcome{}, err
	}
	out.Session.Version = cur.session.Version + 1
	flags := hasEffect(out, domain.EffectRecordFlags)
	err = s.writeTransition(ctx, cur.session.Version, out, flags)
	if err != nil && flags && !errors.Is(err, errStale) && ctx.Err() == nil {
		// Recording the flags is bookkeeping: its failure never stops the
		// transition, so the outcome is written again without it.
		s.logger.WarnContext(ctx, "record experimental setting flags failed; the transition goes on",
			"session_id", id, "effect", domain.EffectRecordFlags, "error", err)
		err = s.writeTransition(ctx, cur.session.Version, out, false)
	}
	if err != nil {
		s.cache.forget(id)
		return domain.Outcome{}, err
	}
	s.cache.put(decided{session: out.Session, wakes: cur.wakes})
	s.signal.Notify()
	return out, nil
}

// read loads a session and counts its armed wake-ups in one statement, and
// remembers them.
func (s *Sessions) read(ctx context.Context, ref domain.SessionRef) (decided, error) {
	d, err := scanDecided(ref, s.pool.QueryRow(ctx, selectDecided(ref, ""), refArg(ref)))
	if err != nil {
		return decided{}, err
	}
	s.cache.put(d)
	return d, nil
}

// selectDecided is the statement that reads what a transition decides from,
// with lock appended (e.g. "FOR UPDATE").
func selectDecided(ref domain.SessionRef, lock string) string {
	where := "id = $1"
	if ref.Slug != "" {
		where = "slug = $1"
	}
	return `SELECT ` + sessionColumns + `,
			(SELECT count(*) FROM wake_triggers w WHERE w.session_id = sessions.id AND w.kind = 'one_time'),
			(SELECT count(*) FROM wake_triggers w WHERE w.session_id = sessions.id AND w.kind = 'session_state')
		FROM sessions WHERE ` + where + ` ` + lock
}

// refArg is the value selectDecided's $1 takes.
func refArg(ref domain.SessionRef) any {
	if ref.Slug != "" {
		return ref.Slug
	}
	return ref.ID
}

func scanDecided(ref domain.SessionRef, row pgx.Row) (decided, error) {
	var d decided
	var err error
	d.session, err = scanSession(row, &d.wakes.OneTime, &d.wakes.Watchers)
	if errors.Is(err, pgx.ErrNoRows) {
		return decided{}, &domain.NotFoundError{Ref: ref}
	}
	if err != nil {
		return decided{}, fmt.Errorf("read session %s: %w", ref, err)
	}
	return d, nil
}

func (s *Sessions) writeRefusal(ctx context.Context, cur domain.Session, refused *domain.TransitionError) error {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO session_timeline (session_id, kind, message, created_at)
		SELECT id, $3, $4, $5 FROM sessions WHERE id = $1 AND version = $2`,
		cur.ID, cur.Version, domain.TimelineRefusal, "[State Machine] refused: "+refused.Error(), s.clock.Now())
	switch {
	case err != nil:
		return fmt.Errorf("write refusal of session %d: %w", cur.ID, err)
	case tag.RowsAffected() == 0:
		s.cache.forget(cur.ID)
		return errStale
	}
	return nil
}

// writeTransition writes out in one statement, applied only while the
// session is still at version expect: the row, the timeline lines, the
// outbox events and, with flags, the experimental-setting flags.
func (s *Sessions) writeTransition(ctx context.Context, expect int64, out domain.Outcome, flags bool) error {
	sess := out.Session
	markers, err := json.Marshal(sess.Markers)
	if err != nil {
		return fmt.Errorf("encode markers: %w", err)
	}
	// A transition changes only its own columns; the editable ones belong
	// to edits (and the version check keeps the two from crossing).
	args := []any{sess.ID, sess.Status, markers, sess.ElapsedSince, sess.ArchivedAt, sess.ArchivedFrom,
		sess.TrashAfter, sess.UpdatedAt, expect}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	kinds, messages := make([]string, len(out.Timeline)), make([]string, len(out.Timeline))
	for i, l := range out.Timeline {
		kinds[i], messages[i] = string(l.Kind), l.Message
	}
	sql := `WITH s AS (
		UPDATE sessions SET status = $2, markers = $3, elapsed_since = $4, archived_at = $5,
			archived_from = $6, trash_after = $7, updated_at = $8, version = version + 1
		WHERE id = $1 AND version = $9
		RETURNING id)`
	if len(out.Timeline) > 0 {
		sql += `, timeline AS (
		INSERT INTO session_timeline (session_id, kind, message, created_at)
		SELECT s.id, l.kind, l.message, ` + arg(sess.UpdatedAt) + ` FROM s, unnest(` + arg(kinds) + `::text[], ` + arg(messages) + `::text[])
			WITH ORDINALITY AS l(kind, message, n)
		ORDER BY l.n)`
	}
	encoded, err := s.codec.Encode(domain.SessionTransitioned{Session: sess, Outcome: out})
	if err != nil {
		return fmt.Errorf("encode transition of session %d: %w", sess.ID, err)
	}
	var rows outbox.Rows
	for _, a := range encoded {
		rows.Add(a)
	}
	if rows.Len() > 0 {
		first := len(args) + 1
		args = append(args, rows.Args()...)
		sql += `, events AS (` + rows.InsertSQL("s", first) + `)`
	}
	if flags {
		key, def, at := arg(settingProvenanceViaMCP), arg(domain.DefaultSettings.ProvenanceViaMCPEnabled), arg(sess.UpdatedAt)
		sql += `, flags AS (
		INSERT INTO session_experimental_flags (session_id, setting, start_value, end_value, started_at, ended_at)
		SELECT s.id, ` + key + `, v, v, ` + at + `, ` + at + `
		FROM s, (SELECT COALESCE((SELECT value FROM app_settings WHERE key = ` + key + `), to_jsonb(` + def + `::boolean)) AS v) setting
		ON CONFLICT (session_id, setting) DO UPDATE SET end_value = EXCLUDED.end_value, ended_at = EXCLUDED.ended_at)`
	}
	sql += ` SELECT count(*) FROM s`
	var applied int
	if err := s.pool.QueryRow(ctx, sql, args...).Scan(&applied); err != nil {
		return fmt.Errorf("write transition of session %d: %w", sess.ID, err)
	}
	if applied == 0 {
		return errStale
	}
	return nil
}

// Timeline implements app.SessionRepository.
func (s *Sessions) Timeline(ctx context.Context, ref domain.SessionRef) ([]domain.TimelineLine, error) {
	sess, err := s.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, kind, message, created_at FROM session_timeline WHERE session_id = $1 ORDER BY id`, sess.ID)
	if err != nil {
		return nil, fmt.Errorf("read timeline of session %d: %w", sess.ID, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.TimelineLine, error) {
		var l domain.TimelineLine
		err := r.Scan(&l.ID, &l.Kind, &l.Message, &l.CreatedAt)
		l.CreatedAt = l.CreatedAt.UTC()
		return l, err
	})
}

// Events implements app.SessionRepository. The stream is read from the
// outbox, which holds every event the session's transitions sent, so it
// shows exactly what other contexts were told.
func (s *Sessions) Events(ctx context.Context, ref domain.SessionRef) ([]domain.StreamEvent, error) {
	sess, err := s.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	// One row per subscriber: the stream lists each event once.
	rows, err := s.pool.Query(ctx, `
		SELECT id, event_id::text, topic, payload FROM (
			SELECT DISTINCT ON (event_id) id, event_id, topic, payload
			FROM outbox_messages WHERE aggregate_key = $1
			ORDER BY event_id, id
		) events ORDER BY id`, strconv.FormatInt(sess.ID, 10))
	if err != nil {
		return nil, fmt.Errorf("read events of session %d: %w", sess.ID, err)
	}
	var (
		stream       []domain.StreamEvent
		seq          int64
		eventID, tpc string
		payload      []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&seq, &eventID, &tpc, &payload}, func() error {
		entries, err := s.codec.Stream(tpc, payload)
		if err != nil {
			return fmt.Errorf("read event %s of session %d: %w", eventID, sess.ID, err)
		}
		for _, e := range entries {
			e.ID, e.EventID = seq, eventID
			stream = append(stream, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read events of session %d: %w", sess.ID, err)
	}
	return stream, nil
}
