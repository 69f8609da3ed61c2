package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/platform/clock"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/queue/internal/domain"
)

// Messages is the enqueued_messages repository. Every write to one
// session's queue locks that session's session_queues row first, decides
// with the domain, then writes, in one short transaction; so positions stay
// 1..n without gaps however many callers write at once. No transaction
// outlives the statements in it: a delivery's claim is a lease (Claim).
type Messages struct {
	pool   *pgxpool.Pool
	clock  clock.Clock
	leases Leases
}

// NewMessages returns the repository over pool, stamping times from clk,
// with the DefaultLeases.
func NewMessages(pool *pgxpool.Pool, clk clock.Clock) *Messages {
	return &Messages{pool: pool, clock: clk, leases: DefaultLeases}
}

// WithLeases returns the repository with other leases (tests shorten them
// to see a dead holder's claim expire).
func (s *Messages) WithLeases(l Leases) *Messages {
	c := *s
	c.leases = l
	return &c
}

const messageColumns = `id, session_id, position, status, origin, coalesce(acting_session_id, 0), content,
	coalesce(goal, ''), coalesce(idempotency_key, ''), created_at, updated_at,
	claimed_at, sent_at, undelivered_at, coalesce(delivered_job_id, ''), coalesce(undelivered_reason, '')`

func scanMessage(row pgx.Row) (domain.Message, error) {
	var (
		m                          domain.Message
		claimed, sent, undelivered *time.Time
	)
	err := row.Scan(&m.ID, &m.SessionID, &m.Position, &m.Status, &m.Origin, &m.ActingSessionID, &m.Content,
		&m.Goal, &m.IdempotencyKey, &m.CreatedAt, &m.UpdatedAt, &claimed, &sent, &undelivered, &m.DeliveredJobID, &m.UndeliveredReason)
	for _, p := range []struct {
		src *time.Time
		dst *time.Time
	}{{claimed, &m.ClaimedAt}, {sent, &m.SentAt}, {undelivered, &m.UndeliveredAt}} {
		if p.src != nil {
			*p.dst = p.src.UTC()
		}
	}
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return m, err
}

func collectMessages(rows pgx.Rows, err error) ([]domain.Message, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Message, error) { return scanMessage(r) })
}

// lockSession takes the session's queue lock in tx (creating its row on
// first use) with the given row-lock strength, and says whether it is sealed.
func lockSession(ctx context.Context, tx pgx.Tx, sessionID int64, strength string) (sealedBy string, err error) {
	if _, err := tx.Exec(ctx, `INSERT INTO session_queues (session_id) VALUES ($1) ON CONFLICT DO NOTHING`, sessionID); err != nil {
		return "", fmt.Errorf("create session %d's queue: %w", sessionID, err)
	}
	var by *string
	if err := tx.QueryRow(ctx, `SELECT sealed_by FROM session_queues WHERE session_id = $1 `+strength, sessionID).Scan(&by); err != nil {
		return "", fmt.Errorf("lock session %d's queue: %w", sessionID, err)
	}
	if by == nil {
		return "", nil
	}
	return *by, nil
}

func (s *Messages) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, fn)
}

// Enqueue validates n and appends it to its session's queue. A create
// carrying an idempotency key the session has already seen returns the
// first message and created false, whatever became of it since. A sealed
// queue refuses with domain.ErrSealed.
func (s *Messages) Enqueue(ctx context.Context, n domain.NewMessage) (m domain.Message, created bool, err error) {
	if err := n.Validate(); err != nil {
		return domain.Message{}, false, err
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		sealedBy, err := lockSession(ctx, tx, n.SessionID, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		if n.IdempotencyKey != "" {
			m, err = scanMessage(tx.QueryRow(ctx, `SELECT `+messageColumns+` FROM enqueued_messages
				WHERE session_id = $1 AND idempotency_key = $2`, n.SessionID, n.IdempotencyKey))
			if err == nil {
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("look up idempotency key: %w", err)
			}
		}
		if sealedBy != "" {
			return domain.ErrSealed
		}
		now := s.clock.Now()
		m, err = scanMessage(tx.QueryRow(ctx, `INSERT INTO enqueued_messages
				(session_id, position, origin, acting_session_id, content, goal, idempotency_key, created_at, updated_at)
			SELECT $1, coalesce(max(position), 0) + 1, $2, nullif($3::bigint, 0), $4, nullif($5, ''), nullif($6, ''), $7, $7
			FROM enqueued_messages WHERE session_id = $1 AND status IN ('pending', 'processing')
			RETURNING `+messageColumns,
			n.SessionID, n.Origin, n.ActingSessionID, n.Content, n.Goal, n.IdempotencyKey, now))
		if err != nil {
			return fmt.Errorf("insert enqueued message: %w", err)
		}
		created = true
		return nil
	})
	if err != nil {
		return domain.Message{}, false, fmt.Errorf("enqueue for session %d: %w", n.SessionID, err)
	}
	return m, created, nil
}

// List is the session's queue: live messages in delivery order, then the
// sent and undelivered ones, oldest first.
func (s *Messages) List(ctx context.Context, sessionID int64) ([]domain.Message, error) {
	ms, err := collectMessages(s.pool.Query(ctx, `SELECT `+messageColumns+` FROM enqueued_messages
		WHERE session_id = $1
		ORDER BY status NOT IN ('pending', 'processing'), CASE WHEN status IN ('pending', 'processing') THEN position END, id`, sessionID))
	if err != nil {
		return nil, fmt.Errorf("list session %d's queue: %w", sessionID, err)
	}
	return ms, nil
}

// CountPending implements app.Messages: one grouped read over the
// session index for them all.
func (s *Messages) CountPending(ctx context.Context, sessionIDs []int64) (map[int64]int32, error) {
	rows, err := s.pool.Query(ctx, `SELECT session_id, count(*)::int FROM enqueued_messages
		WHERE session_id = ANY($1) AND status = $2 GROUP BY session_id`, sessionIDs, string(domain.StatusPending))
	if err != nil {
		return nil, fmt.Errorf("count pending messages: %w", err)
	}
	counts := make(map[int64]int32, len(sessionIDs))
	var id int64
	var n int32
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error { counts[id] = n; return nil }); err != nil {
		return nil, fmt.Errorf("count pending messages: %w", err)
	}
	return counts, nil
}

// ListPage is one page of the session's queue in List's order, only the
// filter's statuses when it names any, with the size of the whole result.
func (s *Messages) ListPage(ctx context.Context, sessionID int64, f domain.ListFilter) (domain.Page, error) {
	statuses := make([]string, len(f.Statuses))
	for i, st := range f.Statuses {
		statuses[i] = string(st)
	}
	page := domain.Page{Page: f.Page, PerPage: f.PerPage, Messages: []domain.Message{}}
	const where = `WHERE session_id = $1 AND (cardinality($2::text[]) = 0 OR status = ANY($2))`
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM enqueued_messages `+where, sessionID, statuses).Scan(&page.TotalCount); err != nil {
		return domain.Page{}, fmt.Errorf("count session %d's queue: %w", sessionID, err)
	}
	ms, err := collectMessages(s.pool.Query(ctx, `SELECT `+messageColumns+` FROM enqueued_messages `+where+`
		ORDER BY status NOT IN ('pending', 'processing'), CASE WHEN status IN ('pending', 'processing') THEN position END, id
		LIMIT $3 OFFSET $4`, sessionID, statuses, f.PerPage, f.Offset()))
	if err != nil {
		return domain.Page{}, fmt.Errorf("list a page of session %d's queue: %w", sessionID, err)
	}
	if ms != nil {
		page.Messages = ms
	}
	return page, nil
}

// Message is one message of the session's queue, whatever its status; an
// unknown one is domain.ErrNotFound.
func (s *Messages) Message(ctx context.Context, sessionID, id int64) (domain.Message, error) {
	m, err := scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM enqueued_messages
		WHERE session_id = $1 AND id = $2`, sessionID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Message{}, fmt.Errorf("message %d of session %d: %w", id, sessionID, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Message{}, fmt.Errorf("read message %d of session %d: %w", id, sessionID, err)
	}
	return m, nil
}

// Keyed is the session's message queued under idempotencyKey, if any.
func (s *Messages) Keyed(ctx context.Context, sessionID int64, idempotencyKey string) (domain.Message, bool, error) {
	m, err := scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM enqueued_messages
		WHERE session_id = $1 AND idempotency_key = $2`, sessionID, idempotencyKey))
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Message{}, false, nil
	}
	if err != nil {
		return domain.Message{}, false, fmt.Errorf("find session %d's message keyed %q: %w", sessionID, idempotencyKey, err)
	}
	return m, true, nil
}

// Update edits a pending message's text and, when position is not 0, moves
// it there; the rest of the queue keeps its relative order.
func (s *Messages) Update(ctx context.Context, sessionID, id int64, edit domain.Edit, position int) (domain.Message, error) {
	if err := edit.Validate(); err != nil {
		return domain.Message{}, err
	}
	var m domain.Message
	err := s.afterClaims(ctx, func(tx pgx.Tx) error {
		pending, err := lockPendingMessage(ctx, tx, sessionID, id)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		if position != 0 {
			order, err := domain.Reorder(pending.ids, id, position)
			if err != nil {
				return err
			}
			if err := renumber(ctx, tx, pending.base, order, now); err != nil {
				return err
			}
		}
		m, err = scanMessage(tx.QueryRow(ctx, `UPDATE enqueued_messages
			SET content = coalesce($3, content),
			    goal = CASE WHEN $4::text IS NULL THEN goal ELSE nullif($4, '') END,
			    updated_at = $5
			WHERE session_id = $1 AND id = $2 RETURNING `+messageColumns, sessionID, id, edit.Content, edit.Goal, now))
		if err != nil {
			return fmt.Errorf("update message: %w", err)
		}
		return nil
	})
	if err != nil {
		return domain.Message{}, fmt.Errorf("update message %d of session %d: %w", id, sessionID, err)
	}
	return m, nil
}

// lockPendingMessage locks the session's queue for a change of one message
// and returns the pending order, after checking the message is one of the
// session's and still pending. A change waits for the delivery in flight
// (errClaimInFlight, under afterClaims) instead of racing it: the message
// being delivered is sent or pending again by then.
func lockPendingMessage(ctx context.Context, tx pgx.Tx, sessionID, id int64) (pending, error) {
	if _, err := lockSession(ctx, tx, sessionID, "FOR NO KEY UPDATE"); err != nil {
		return pending{}, err
	}
	if err := noClaimInFlight(ctx, tx, sessionID); err != nil {
		return pending{}, err
	}
	order, err := pendingOrder(ctx, tx, sessionID)
	if err != nil {
		return pending{}, err
	}
	if err := checkPending(ctx, tx, sessionID, id, order); err != nil {
		return pending{}, err
	}
	return order, nil
}

// Delete removes a pending message and closes the gap it leaves.
func (s *Messages) Delete(ctx context.Context, sessionID, id int64) error {
	err := s.afterClaims(ctx, func(tx pgx.Tx) error {
		if _, err := lockPendingMessage(ctx, tx, sessionID, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM enqueued_messages WHERE id = $1`, id); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		return closeGaps(ctx, tx, sessionID, s.clock.Now())
	})
	if err != nil {
		return fmt.Errorf("delete message %d of session %d: %w", id, sessionID, err)
	}
	return nil
}

// pending is a session's pending messages in delivery order; base is the
// position before the first (a message being delivered sits ahead of them).
type pending struct {
	ids  []int64
	base int
}

func pendingOrder(ctx context.Context, tx pgx.Tx, sessionID int64) (pending, error) {
	var p pending
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM enqueued_messages WHERE session_id = $1 AND status = 'processing'`,
		sessionID).Scan(&p.base); err != nil {
		return p, fmt.Errorf("count messages in delivery: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT id FROM enqueued_messages WHERE session_id = $1 AND status = 'pending' ORDER BY position`, sessionID)
	if err != nil {
		return p, fmt.Errorf("read queue order: %w", err)
	}
	p.ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return p, fmt.Errorf("read queue order: %w", err)
	}
	return p, nil
}

func checkPending(ctx context.Context, tx pgx.Tx, sessionID, id int64, p pending) error {
	for _, x := range p.ids {
		if x == id {
			return nil
		}
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM enqueued_messages WHERE session_id = $1 AND id = $2)`,
		sessionID, id).Scan(&exists); err != nil {
		return fmt.Errorf("find message: %w", err)
	}
	if exists {
		return domain.ErrNotPending
	}
	return domain.ErrNotFound
}

// renumber writes order's positions (base+1, base+2, ...) in one statement;
// the exclusion constraint is checked at its end, so positions may swap.
func renumber(ctx context.Context, tx pgx.Tx, base int, order []int64, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE enqueued_messages m SET position = $1 + o.n, updated_at = $3
		FROM unnest($2::bigint[]) WITH ORDINALITY AS o(id, n)
		WHERE m.id = o.id AND m.position <> $1 + o.n`, base, order, now)
	if err != nil {
		return fmt.Errorf("renumber queue: %w", err)
	}
	return nil
}

// closeGaps renumbers a session's live messages 1..n in their order.
func closeGaps(ctx context.Context, tx pgx.Tx, sessionID int64, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE enqueued_messages m SET position = o.n, updated_at = $2
		FROM (SELECT id, row_number() OVER (ORDER BY position) AS n FROM enqueued_messages
		      WHERE session_id = $1 AND status IN ('pending', 'processing')) o
		WHERE m.id = o.id AND m.position <> o.n`, sessionID, now)
	if err != nil {
		return fmt.Errorf("close gaps in queue: %w", err)
	}
	return nil
}
