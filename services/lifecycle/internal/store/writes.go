package store

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/outbox"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// writes collects everything one decision writes — the row, its timeline
// lines, its event stream, its outbox events and, last, the experimental
// flags — and commits them in one round trip.
type writes struct {
	b    pgx.Batch
	wrap []func(error) error // how each statement's error is reported
	// flagsAt is the index of the savepoint before the flags, or 0: their
	// failure is rolled back to alone, so it never stops the transition.
	flagsAt     int
	sessionID   int64  // for the flags' warning
	flagsEffect string // the effect's name, for the same
	// trace is the span of the request deciding, carried by every event
	// announced (outbox.TraceOf).
	trace outbox.Trace
}

// newWrites starts the writes of a decision made for ctx's request.
func newWrites(ctx context.Context) writes { return writes{trace: outbox.TraceOf(ctx)} }

func (w *writes) queue(wrap func(error) error, sql string, args ...any) {
	w.b.Queue(sql, args...)
	w.wrap = append(w.wrap, wrap)
}

// commit sends the writes and COMMIT in one batch. If only the flags fail,
// the transaction rolls back to the savepoint before them, the failure is
// logged, and the rest commits.
func (w *writes) commit(ctx context.Context, conn *pgx.Conn, logger *slog.Logger) error {
	w.queue(func(err error) error { return fmt.Errorf("commit transaction: %w", err) }, "COMMIT")
	br := conn.SendBatch(ctx, &w.b)
	for i := range w.b.Len() {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			if flags := w.flagsAt > 0 && i == w.flagsAt+1; !flags || ctx.Err() != nil {
				return w.wrap[i](err)
			}
			logger.WarnContext(ctx, "record experimental setting flags failed; the transition goes on",
				"session_id", w.sessionID, "effect", w.flagsEffect, "error", err)
			// By the simple protocol: after a failed batch pgx forgets the
			// batch's prepared statements but drops them only once the
			// transaction is over, so preparing COMMIT again would collide.
			if _, err := conn.PgConn().Exec(ctx, "ROLLBACK TO SAVEPOINT record_flags; COMMIT").ReadAll(); err != nil {
				return fmt.Errorf("commit transaction without its flags: %w", err)
			}
			return nil
		}
	}
	return br.Close()
}

// transition queues the columns a transition owns — never the editable
// ones, which belong to edits — and the version decided under the lock
// (s.Version: one committed change, one version, whatever the trigger
// writes before it moved).
func (w *writes) transition(id int64, s domain.Session) error {
	markers, err := encodeMarkers(s.Markers)
	if err != nil {
		return fmt.Errorf("encode markers of session %d: %w", id, err)
	}
	w.queue(func(err error) error { return fmt.Errorf("write transition of session %d: %w", id, err) }, `
		UPDATE sessions SET status = $2, markers = $3, elapsed_since = $4, archived_at = $5,
			archived_from = $6, trash_after = $7, updated_at = $8, version = $9
		WHERE id = $1`,
		id, s.Status, markers, s.ElapsedSince, s.ArchivedAt, s.ArchivedFrom, s.TrashAfter, s.UpdatedAt, s.Version)
	return nil
}

// goal queues a delivery's goal: the one editable column a delivery sets.
func (w *writes) goal(id int64, goal string) {
	w.queue(func(err error) error { return fmt.Errorf("set goal of session %d: %w", id, err) },
		`UPDATE sessions SET goal = $2 WHERE id = $1`, id, goal)
}

// delivery queues the record of a delivery, which answers its retries.
func (w *writes) delivery(deliveryID string, sessionID int64, jobID string) {
	w.queue(func(err error) error {
		if pgdb.Code(err) == pgdb.CodeUniqueViolation {
			// Read under session sessionID's lock and not found: another
			// session's delivery took the id meanwhile.
			return fmt.Errorf("delivery %q was applied to another session meanwhile; a delivery id names one delivery: %w", deliveryID, domain.ErrAlreadyExists)
		}
		return fmt.Errorf("record delivery %q of session %d: %w", deliveryID, sessionID, err)
	}, `INSERT INTO deliveries (delivery_id, session_id, job_id) VALUES ($1, $2, $3)`, deliveryID, sessionID, jobID)
}

// appliedTransition queues the record of a transition applied under its
// caller's idempotency key, which answers the call's retries.
func (w *writes) appliedTransition(key string, sessionID int64, out *domain.Outcome) {
	event := ""
	if len(out.Applied) > 0 {
		event = string(out.Applied[0])
	}
	w.queue(func(err error) error {
		if pgdb.Code(err) == pgdb.CodeUniqueViolation {
			// Read under session sessionID's lock and not found: another
			// session's transition took the key meanwhile.
			return fmt.Errorf("idempotency key %q was applied to another session meanwhile; a key names one transition: %w", key, domain.ErrAlreadyExists)
		}
		return fmt.Errorf("record the transition of session %d under key %q: %w", sessionID, key, err)
	}, `INSERT INTO applied_transitions (idempotency_key, session_id, event, from_status) VALUES ($1, $2, $3, $4)`,
		key, sessionID, event, int16(out.From))
}

// marked queues the session's markers and trash deadline alone, for
// bookkeeping that is not a transition (a drain attempt counted, the
// deadline of a trash that holds nothing dropped); both were read under
// the lock, so one left as it was is written as it was.
func (w *writes) marked(id int64, s domain.Session) error {
	markers, err := encodeMarkers(s.Markers)
	if err != nil {
		return fmt.Errorf("encode markers of session %d: %w", id, err)
	}
	w.queue(func(err error) error { return fmt.Errorf("write markers of session %d: %w", id, err) },
		`UPDATE sessions SET markers = $2, trash_after = $3, version = version + 1 WHERE id = $1`, id, markers, s.TrashAfter)
	return nil
}

// removeMetadata queues the removal of keys from the session's
// custom_metadata (a resume's stale MCP-failure markers), leaving every
// other key as it is.
func (w *writes) removeMetadata(id int64, keys []string) {
	wrap := func(err error) error {
		return fmt.Errorf("remove stale custom_metadata keys of session %d: %w", id, err)
	}
	w.queue(wrap, `UPDATE sessions SET custom_metadata = custom_metadata - $2::text[] WHERE id = $1`, id, keys)
}

// edit queues the editable columns.
func (w *writes) edit(id int64, s domain.Session) error {
	md, err := json.Marshal(s.CustomMetadata)
	if err != nil {
		return fmt.Errorf("encode custom_metadata of session %d: %w", id, err)
	}
	w.queue(func(err error) error { return interpretWrite("update session", err, s) }, `
		UPDATE sessions SET title = $2, slug = NULLIF($3, ''), goal = $4, notes = $5,
			scheduling_class = $6, precedence = $7, custom_metadata = $8, heartbeat_enabled = $9,
			heartbeat_interval_seconds = $10, push_notifications = $11, updated_at = $12, category_id = $13,
			starred = $14, version = version + 1
		WHERE id = $1`,
		id, s.Title, s.Slug, s.Goal, s.Notes, s.SchedulingClass, s.Precedence, md,
		s.HeartbeatEnabled, s.HeartbeatIntervalSeconds, s.PushNotifications, s.UpdatedAt, s.CategoryID, s.Starred)
	return nil
}

// insert queues a new session's row, its id already reserved.
func (w *writes) insert(s domain.Session) error {
	md, err := json.Marshal(s.CustomMetadata)
	if err != nil {
		return fmt.Errorf("encode custom_metadata: %w", err)
	}
	w.queue(func(err error) error { return interpretWrite("insert session", err, s) }, `
		INSERT INTO sessions (id, slug, status, title, prompt, goal, agent_root, agent_runtime, git_root,
			branch, subdirectory, parent_session_id, genesis, scheduling_class, precedence,
			custom_metadata, created_at, updated_at, heartbeat_enabled, heartbeat_interval_seconds, notes, mcp_tool_groups,
			push_notifications)
		VALUES ($1, NULLIF($2, ''), $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`,
		s.ID, s.Slug, s.Status, s.Title, s.Prompt, s.Goal, s.AgentRoot, s.AgentRuntime,
		s.GitRoot, s.Branch, s.Subdirectory, s.ParentSessionID, s.Genesis,
		s.SchedulingClass, s.Precedence, md, s.CreatedAt, s.UpdatedAt,
		s.HeartbeatEnabled, s.HeartbeatIntervalSeconds, s.Notes, s.MCPToolGroups, s.PushNotifications)
	return nil
}

func (w *writes) delete(id int64) {
	w.queue(func(err error) error { return fmt.Errorf("delete session %d: %w", id, err) },
		`DELETE FROM sessions WHERE id = $1`, id)
}

func (w *writes) timeline(id int64, at time.Time, lines ...domain.TimelineEntry) {
	for _, l := range lines {
		w.queue(func(err error) error { return fmt.Errorf("write timeline of session %d: %w", id, err) },
			`INSERT INTO session_timeline (session_id, kind, message, created_at) VALUES ($1, $2, $3, $4)`,
			id, l.Kind, l.Message, at)
	}
}

// announce queues the outbox events of f and returns them.
func (w *writes) announce(codec Codec, f domain.Fact) ([]outbox.Addressed, error) {
	encoded, err := codec.Encode(f)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", f, err)
	}
	for i := range encoded {
		encoded[i].Event.Trace = w.trace
	}
	for _, a := range encoded {
		before := w.b.Len()
		outbox.Queue(&w.b, a.Subscribers, a.Event)
		for range w.b.Len() - before {
			w.wrap = append(w.wrap, func(err error) error { return fmt.Errorf("enqueue %s: %w", a.Event.Topic, err) })
		}
	}
	return encoded, nil
}

// stream queues the session's event-stream entries for the events a
// transition announced: the stream shows exactly what other contexts were
// told, each entry under the id of the event that carries it. The effects
// are in the order the transition requested them (effects, the spec's
// order), whether lifecycle carried them out itself or announced them.
func (w *writes) stream(codec Codec, id int64, announced []outbox.Addressed, effects []domain.Effect) error {
	type entry struct {
		eventID string
		e       domain.StreamEvent
	}
	var entries []entry
	for _, a := range announced {
		read, err := codec.Stream(a.Event.Topic, a.Event.Payload)
		if err != nil {
			return fmt.Errorf("read back event %s of session %d: %w", a.Event.Topic, id, err)
		}
		for _, e := range read {
			entries = append(entries, entry{a.Event.ID, e})
		}
	}
	rank := func(name string) int {
		if name == "transition" {
			return -1
		}
		for i, e := range effects {
			if codec.EffectName(e) == name {
				return i
			}
		}
		return len(effects)
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return rank(a.e.Name) - rank(b.e.Name) })
	if len(entries) > 0 {
		w.queue(func(err error) error { return fmt.Errorf("lock the event stream's order: %w", err) },
			`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, sessionEventsLock)
	}
	for _, en := range entries {
		e := en.e
		w.queue(func(err error) error { return fmt.Errorf("write event %s of session %d: %w", e.Name, id, err) }, `
			INSERT INTO session_events (session_id, event_id, name, alerting, payload, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`,
			id, en.eventID, e.Name, e.Alerting, e.Payload, e.CreatedAt)
	}
	return nil
}

// flags queues, behind a savepoint, the experimental settings a start or
// resume ran with: the first fixes the start-of-life value, every later one
// moves the end-of-life value. It must come last.
func (w *writes) flags(id int64, at time.Time, effect string) {
	w.flagsAt, w.sessionID, w.flagsEffect = w.b.Len(), id, effect
	w.queue(func(err error) error { return fmt.Errorf("savepoint before the flags: %w", err) }, "SAVEPOINT record_flags")
	w.queue(func(err error) error { return fmt.Errorf("record flags of session %d: %w", id, err) }, `
		INSERT INTO session_experimental_flags (session_id, setting, start_value, end_value, started_at, ended_at)
		SELECT $1, $2, v, v, $4, $4
		FROM (SELECT COALESCE((SELECT value FROM app_settings WHERE key = $2), to_jsonb($3::boolean)) AS v) setting
		ON CONFLICT (session_id, setting) DO UPDATE SET end_value = EXCLUDED.end_value, ended_at = EXCLUDED.ended_at`,
		id, settingProvenanceViaMCP, domain.DefaultSettings.ProvenanceViaMCPEnabled, at)
}

// version queues the session's version decided under the lock, for a
// change that is not a transition (a trigger armed or moved: its own write
// moved the version already, migration 0005), with its markers when set.
func (w *writes) version(id, version int64, markers []byte) {
	wrap := func(err error) error { return fmt.Errorf("write version of session %d: %w", id, err) }
	if markers == nil {
		w.queue(wrap, `UPDATE sessions SET version = $2 WHERE id = $1`, id, version)
		return
	}
	w.queue(wrap, `UPDATE sessions SET version = $2, markers = $3 WHERE id = $1`, id, version, markers)
}
