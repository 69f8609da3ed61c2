package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/runner/internal/agent"
	"github.com/zimmerhq/zimmer/services/runner/internal/transcript"
)

// Transcripts keeps turns' transcripts: the transcript_turns and
// transcript_lines tables, bounded by Limits.
type Transcripts struct {
	pool   *pgxpool.Pool
	limits transcript.Limits
}

var (
	_ transcript.Appender = (*Transcripts)(nil)
	_ transcript.Reader   = (*Transcripts)(nil)
)

// NewTranscripts returns the transcripts over pool, bounded by limits.
func NewTranscripts(pool *pgxpool.Pool, limits transcript.Limits) *Transcripts {
	return &Transcripts{pool: pool, limits: limits}
}

// Append stores one line of a turn, or counts it when the turn is past its
// bounds. The turn's row is locked for the decision, so concurrent appends
// to one turn (an activity retried while its first attempt still runs)
// take seqs one after the other and never overrun the bounds.
func (s *Transcripts) Append(ctx context.Context, sessionID int64, turnID string, e agent.Event) error {
	if turnID == "" {
		return errors.New("append transcript line: no turn id")
	}
	err := throughOutage(ctx, func() error {
		return pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
			return s.appendIn(ctx, tx, sessionID, turnID, e)
		})
	})
	if err != nil {
		return fmt.Errorf("append transcript line of turn %s: %w", turnID, err)
	}
	return nil
}

// outageBudget is how long a transcript write waits out a database that
// does not answer (a restart, a failover) before the line is given up.
const outageBudget = 2 * time.Minute

// throughOutage runs write until it succeeds, fails for a reason of its
// own, or the database has been unavailable for outageBudget: what an
// agent prints while Postgres restarts is kept, not dropped (the lines
// wait, in order, on the turn's delivery goroutine). A write whose commit
// was acknowledged but whose answer was lost may be kept twice.
func throughOutage(ctx context.Context, write func() error) error {
	deadline := time.Now().Add(outageBudget)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := write()
		if !pgdb.Unavailable(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// appendIn is Append inside tx.
func (s *Transcripts) appendIn(ctx context.Context, tx pgx.Tx, sessionID int64, turnID string, e agent.Event) error {
	line := s.limits.NewLine(sessionID, turnID, e)
	var u transcript.Usage
	var owner int64
	err := tx.QueryRow(ctx, `
		INSERT INTO transcript_turns (turn_id, session_id) VALUES ($1, $2)
		ON CONFLICT (turn_id) DO UPDATE SET turn_id = EXCLUDED.turn_id
		RETURNING session_id, stored_lines, stored_bytes, dropped_lines`, turnID, sessionID).
		Scan(&owner, &u.StoredLines, &u.StoredBytes, &u.DroppedLines)
	if err != nil {
		return err
	}
	if owner != sessionID {
		return fmt.Errorf("turn %s belongs to session %d, not %d", turnID, owner, sessionID)
	}
	size := transcript.Size(line)
	switch s.limits.Admit(u, size) {
	case transcript.Store:
		_, err = tx.Exec(ctx, `
			WITH l AS (
				INSERT INTO transcript_lines (turn_id, session_id, seq, kind, type, text, raw, raw_truncated, is_error)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			)
			UPDATE transcript_turns SET stored_lines = stored_lines + 1, stored_bytes = stored_bytes + $10
			WHERE turn_id = $1`,
			turnID, sessionID, u.StoredLines+1, line.Kind, line.Type, line.Text, line.Raw, line.RawTruncated, line.IsError, size)
	case transcript.DropFirst:
		_, err = tx.Exec(ctx, `
			WITH l AS (
				INSERT INTO transcript_lines (turn_id, session_id, seq, kind, text) VALUES ($1, $2, $3, $4, $5)
			)
			UPDATE transcript_turns SET dropped_lines = 1 WHERE turn_id = $1`,
			turnID, sessionID, u.StoredLines+1, transcript.KindDropped, s.limits.DroppedText(1))
	case transcript.Drop:
		_, err = tx.Exec(ctx, `
			WITH t AS (
				UPDATE transcript_turns SET dropped_lines = dropped_lines + 1 WHERE turn_id = $1
			)
			UPDATE transcript_lines SET text = $3 WHERE turn_id = $1 AND seq = $2`,
			turnID, u.StoredLines+1, s.limits.DroppedText(u.DroppedLines+1))
	}
	return err
}

// CutOff ends a turn whose runner never saw it end: note becomes its last
// line and outcome its ending, together, unless the turn has an ending
// already (then nothing changes, and ended is false). The runner's next
// incarnation calls it for the turns whose processes its predecessor left.
func (s *Transcripts) CutOff(ctx context.Context, sessionID int64, turnID, outcome string, note agent.Event) (ended bool, err error) {
	if turnID == "" || outcome == "" {
		return false, errors.New("cut off transcript turn: a turn id and an outcome are required")
	}
	err = pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		var done bool
		err := tx.QueryRow(ctx, `SELECT ended_at IS NOT NULL FROM transcript_turns WHERE turn_id = $1 FOR UPDATE`, turnID).Scan(&done)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if done {
			return nil
		}
		if err := s.appendIn(ctx, tx, sessionID, turnID, note); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE transcript_turns SET ended_at = now(), outcome = $2 WHERE turn_id = $1`, turnID, outcome); err != nil {
			return err
		}
		ended = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("cut off transcript turn %s: %w", turnID, err)
	}
	return ended, nil
}

// EndTurn records how a turn ended (outcome: e.g. "exited 0", "killed by
// SIGKILL"). A turn that printed nothing gets its row here. Ending an ended
// turn again keeps the first ending: a retried activity reports the same
// end twice.
func (s *Transcripts) EndTurn(ctx context.Context, sessionID int64, turnID, outcome string) error {
	if turnID == "" || outcome == "" {
		return errors.New("end transcript turn: a turn id and an outcome are required")
	}
	err := throughOutage(ctx, func() error {
		_, err := s.pool.Exec(ctx, `
			INSERT INTO transcript_turns (turn_id, session_id, ended_at, outcome) VALUES ($1, $2, now(), $3)
			ON CONFLICT (turn_id) DO UPDATE SET ended_at = now(), outcome = EXCLUDED.outcome
			WHERE transcript_turns.ended_at IS NULL AND transcript_turns.session_id = EXCLUDED.session_id`,
			turnID, sessionID, outcome)
		return err
	})
	if err != nil {
		return fmt.Errorf("end transcript turn %s: %w", turnID, err)
	}
	return nil
}

const lineColumns = `l.id, l.session_id, l.turn_id, l.seq, l.kind, l.type, l.text, l.raw, l.raw_truncated, l.is_error, l.created_at`

func scanLine(row pgx.Row, extra ...any) (transcript.Line, error) {
	var l transcript.Line
	err := row.Scan(append([]any{&l.ID, &l.SessionID, &l.TurnID, &l.Seq, &l.Kind, &l.Type, &l.Text, &l.Raw,
		&l.RawTruncated, &l.IsError, &l.CreatedAt}, extra...)...)
	l.CreatedAt = l.CreatedAt.UTC()
	return l, err
}

// Page reads a page of a session's transcript, newest turn first and each
// turn's lines in order; it stops at q.PageSize lines or
// transcript.MaxPageBytes, whichever comes first (always at least one line).
// The lines and their turns are read from one snapshot, so a turn shown
// ended has every line it stored before its end on the page: read apart,
// a turn that ended between the two reads looked over without its last
// lines (a poller took it as done without them).
func (s *Transcripts) Page(ctx context.Context, q transcript.Query) (transcript.Page, error) {
	size := q.PageSize
	if size <= 0 {
		size = transcript.DefaultPageSize
	}
	size = min(size, transcript.MaxPageSize)
	var page transcript.Page
	err := pgdb.InTx(ctx, s.pool, pgx.RepeatableRead, func(tx pgx.Tx) error {
		var err error
		page, err = readPage(ctx, tx, q, size)
		return err
	})
	if err != nil {
		return transcript.Page{}, fmt.Errorf("read transcript of session %d: %w", q.SessionID, err)
	}
	return page, nil
}

func readPage(ctx context.Context, db pgdb.DBTX, q transcript.Query, size int) (transcript.Page, error) {
	rows, err := db.Query(ctx, `
		SELECT `+lineColumns+`, t.position
		FROM transcript_lines l JOIN transcript_turns t USING (turn_id)
		WHERE t.session_id = $1 AND ($2 = '' OR t.turn_id = $2)
		  AND ($3 = 0 OR t.position < $3 OR (t.position = $3 AND l.seq > $4))
		ORDER BY t.position DESC, l.seq
		LIMIT $5`, q.SessionID, q.TurnID, q.After.Position, q.After.Seq, size+1)
	if err != nil {
		return transcript.Page{}, err
	}
	var page transcript.Page
	var positions []int64
	var bytes int64
	more := false
	for rows.Next() {
		var pos int64
		l, err := scanLine(rows, &pos)
		if err != nil {
			rows.Close()
			return transcript.Page{}, err
		}
		bytes += transcript.Size(l)
		if len(page.Lines) == size || (len(page.Lines) > 0 && bytes > transcript.MaxPageBytes) {
			more = true
			break
		}
		page.Lines, positions = append(page.Lines, l), append(positions, pos)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return transcript.Page{}, err
	}
	if more {
		last := len(page.Lines) - 1
		page.Next = transcript.Cursor{Position: positions[last], Seq: page.Lines[last].Seq}
	}
	var turnIDs []string
	for _, l := range page.Lines {
		if len(turnIDs) == 0 || turnIDs[len(turnIDs)-1] != l.TurnID {
			turnIDs = append(turnIDs, l.TurnID)
		}
	}
	if page.Turns, err = turns(ctx, db, turnIDs); err != nil {
		return transcript.Page{}, err
	}
	return page, nil
}

// turns reads the named turns, newest first.
func turns(ctx context.Context, db pgdb.DBTX, ids []string) ([]transcript.Turn, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := db.Query(ctx, `
		SELECT turn_id, session_id, started_at, ended_at, outcome, stored_lines, stored_bytes, dropped_lines
		FROM transcript_turns WHERE turn_id = ANY($1) ORDER BY position DESC`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (transcript.Turn, error) {
		var t transcript.Turn
		var ended *time.Time
		err := row.Scan(&t.TurnID, &t.SessionID, &t.StartedAt, &ended, &t.Outcome, &t.StoredLines, &t.StoredBytes, &t.DroppedLines)
		t.StartedAt = t.StartedAt.UTC()
		if ended != nil {
			t.EndedAt = ended.UTC()
		}
		return t, err
	})
}

// LatestLines returns the newest line of each of the sessions that has
// one: one index probe per session (transcript_lines_session), one query
// for them all.
func (s *Transcripts) LatestLines(ctx context.Context, sessionIDs []int64) ([]transcript.Line, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+lineColumns+` FROM unnest($1::bigint[]) AS s(id)
		CROSS JOIN LATERAL (SELECT * FROM transcript_lines WHERE session_id = s.id ORDER BY id DESC LIMIT 1) l`, sessionIDs)
	if err != nil {
		return nil, fmt.Errorf("read the latest transcript lines: %w", err)
	}
	lines, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (transcript.Line, error) { return scanLine(row) })
	if err != nil {
		return nil, fmt.Errorf("read the latest transcript lines: %w", err)
	}
	return lines, nil
}

// SearchSessions returns the sessions with a line whose text holds query's
// words as a phrase, the one whose newest matching line is newest first, at
// most limit of them, and whether more matched. The match is the GIN index's
// (transcript_lines_text_search, the same expression): its cost follows
// the matching lines, never the table.
func (s *Transcripts) SearchSessions(ctx context.Context, query string, limit int) ([]int64, bool, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT session_id FROM transcript_lines
		WHERE to_tsvector('simple'::regconfig, text) @@ phraseto_tsquery('simple'::regconfig, $1)
		GROUP BY session_id ORDER BY max(id) DESC LIMIT $2`, query, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("search the transcripts: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, false, fmt.Errorf("search the transcripts: %w", err)
	}
	if len(ids) > limit {
		return ids[:limit], true, nil
	}
	return ids, false, nil
}

// LinesAfter implements transcript.Reader.
func (s *Transcripts) LinesAfter(ctx context.Context, sessionID, afterID int64, limit int) ([]transcript.Line, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+lineColumns+` FROM transcript_lines l
		WHERE l.session_id = $1 AND l.id > $2 ORDER BY l.id LIMIT $3`, sessionID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("read transcript of session %d: %w", sessionID, err)
	}
	lines, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (transcript.Line, error) { return scanLine(row) })
	if err != nil {
		return nil, fmt.Errorf("read transcript of session %d: %w", sessionID, err)
	}
	return lines, nil
}

// Tail returns session sessionID's newest lines up to line upTo (0: its
// newest), at most limit of them, oldest first: what a status summary
// reads, and what a fork's harvest reads its summary from.
func (s *Transcripts) Tail(ctx context.Context, sessionID, upTo int64, limit int) ([]transcript.Line, error) {
	if upTo <= 0 {
		upTo = math.MaxInt64
	}
	rows, err := s.pool.Query(ctx, `
		SELECT * FROM (
			SELECT `+lineColumns+` FROM transcript_lines l
			WHERE l.session_id = $1 AND l.id <= $2 ORDER BY l.id DESC LIMIT $3) newest
		ORDER BY id`, sessionID, upTo, limit)
	if err != nil {
		return nil, fmt.Errorf("read the newest transcript of session %d: %w", sessionID, err)
	}
	lines, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (transcript.Line, error) { return scanLine(row) })
	if err != nil {
		return nil, fmt.Errorf("read the newest transcript of session %d: %w", sessionID, err)
	}
	return lines, nil
}

// StartOfNewestTurn implements transcript.Reader. A new turn's lines all
// have higher ids than the previous turn's, so starting before the newest
// turn's first line shows that turn whole and every turn after it.
func (s *Transcripts) StartOfNewestTurn(ctx context.Context, sessionID int64) (int64, error) {
	// One statement, so one snapshot: read in two, a line committed between
	// them ("the newest turn has no line yet", then "the last line is N")
	// would be skipped by the follower for ever. A turn that printed
	// nothing yet has no lines to skip: everything after the session's last
	// line is new.
	var start int64
	err := s.pool.QueryRow(ctx, `
		SELECT COALESCE(
			(SELECT min(l.id) - 1 FROM transcript_lines l
			 WHERE l.turn_id = (SELECT turn_id FROM transcript_turns WHERE session_id = $1 ORDER BY position DESC LIMIT 1)),
			(SELECT max(id) FROM transcript_lines WHERE session_id = $1),
			0)`, sessionID).Scan(&start)
	if err != nil {
		return 0, fmt.Errorf("find the newest turn of session %d: %w", sessionID, err)
	}
	return start, nil
}

// Prune deletes the turns that ended before cutoff, with their lines, a
// batch at a time, and returns how many turns went. A running turn is never
// pruned. The runner's retention schedule calls it.
func (s *Transcripts) Prune(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `
			DELETE FROM transcript_turns WHERE turn_id IN (
				SELECT turn_id FROM transcript_turns WHERE ended_at < $1 LIMIT $2)`, cutoff, batch)
		if err != nil {
			return total, fmt.Errorf("prune transcripts ended before %s: %w", cutoff.Format(time.RFC3339), err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}
