package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/pgdb"
)

// Slots keeps the fleet's turn slots (LC-36). Every write locks the one
// turn_slot_limit row first, so the grants of every lifecycle replica are
// made one pass at a time and never exceed the limit; the sessions it reads
// are read after that lock, so the lock order is the same everywhere.
type Slots struct {
	pool *pgxpool.Pool
	// environment is LIFECYCLE_TURN_SLOTS: the limit while no admin set
	// one; nil is none.
	environment *int
}

var _ app.SlotRepository = (*Slots)(nil)

// NewSlots returns the turn slots over pool, environment the configured
// limit (nil: unlimited unless an admin sets one).
func NewSlots(pool *pgxpool.Pool, environment *int) *Slots {
	return &Slots{pool: pool, environment: environment}
}

// AcquireSlot implements app.SlotRepository. node is the runner node the
// turn runs on ("" when the runner did not say): a slot granted before
// (to a spot sleeper being resumed) is this turn's unless node is at its
// own limit, when the grant goes back and the turn waits in line.
func (s *Slots) AcquireSlot(ctx context.Context, sessionID int64, turnID, node string, clock func() time.Time) (app.SlotAcquisition, error) {
	var a app.SlotAcquisition
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		a = app.SlotAcquisition{}
		limit, now, err := s.lockLimit(ctx, tx, clock)
		if err != nil {
			return err
		}
		var status domain.Status
		err = tx.QueryRow(ctx, `SELECT status FROM sessions WHERE id = $1`, sessionID).Scan(&status)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return &domain.NotFoundError{Ref: domain.SessionRef{ID: sessionID}}
		case err != nil:
			return fmt.Errorf("read session %d: %w", sessionID, err)
		case status == domain.StatusFailed || status == domain.StatusArchived:
			// Its waiting line is dropped by the pass.
			return &domain.PreconditionError{Reason: fmt.Sprintf(
				"session %d is %s: its turn will not run, so it gets no turn slot", sessionID, status)}
		}
		granted, err := s.claimGrant(ctx, tx, sessionID, turnID, node)
		if err != nil {
			return err
		}
		if granted {
			// Granted before (a spot sleeper's resume, a pass since its
			// last ask): it is this turn's.
			a.Granted = true
			_, err := tx.Exec(ctx, `DELETE FROM turn_slot_waiters WHERE session_id = $1`, sessionID)
			return err
		}
		var since time.Time
		var joined bool
		err = tx.QueryRow(ctx, `
			INSERT INTO turn_slot_waiters (session_id, turn_id, since, node) VALUES ($1, $2, $3, $4)
			ON CONFLICT (session_id) DO UPDATE SET turn_id = EXCLUDED.turn_id, node = EXCLUDED.node
			RETURNING since, xmax = 0`, sessionID, turnID, now, node).Scan(&since, &joined)
		if err != nil {
			return fmt.Errorf("put the turn of session %d in line: %w", sessionID, err)
		}
		// A turn that finds a slot at its first ask never waited: no line.
		var fresh int64
		if joined {
			fresh = sessionID
		}
		held, nodes, p, err := s.pass(ctx, tx, limit, now, fresh)
		if err != nil {
			return err
		}
		a.Pass = p
		for _, g := range p.Granted {
			if g.SessionID == sessionID {
				a.Granted = true
			}
		}
		if a.Granted {
			return nil
		}
		a.Wait = domain.SlotWaits(p.Waiting)[sessionID]
		if joined {
			return timelineNote(ctx, tx, sessionID, now, domain.SlotWaitLine(turnID, limit, held, node, nodes, a.Wait))
		}
		return nil
	})
	return a, err
}

// claimGrant gives turnID the slot its session was granted before, if
// any, on node; a grant its node has no room for (a sleeper's, made before
// its node was known) is given back instead.
func (s *Slots) claimGrant(ctx context.Context, tx pgx.Tx, sessionID int64, turnID, node string) (bool, error) {
	var heldOn string
	err := tx.QueryRow(ctx, `SELECT node FROM turn_slots WHERE session_id = $1`, sessionID).Scan(&heldOn)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read the turn slot of session %d: %w", sessionID, err)
	}
	if heldOn != node {
		nodes, err := readNodeSlots(ctx, tx)
		if err != nil {
			return false, err
		}
		if nodes.Full(node) {
			if _, err := tx.Exec(ctx, `DELETE FROM turn_slots WHERE session_id = $1`, sessionID); err != nil {
				return false, fmt.Errorf("give back the turn slot of session %d: %w", sessionID, err)
			}
			return false, nil
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE turn_slots SET turn_id = $2, node = $3 WHERE session_id = $1`, sessionID, turnID, node); err != nil {
		return false, fmt.Errorf("claim the turn slot of session %d: %w", sessionID, err)
	}
	return true, nil
}

// SetNodeSlots implements app.SlotRepository: node's own limit (nil:
// none), as the node reports it when it starts, then a pass, so the slots
// a raised limit frees are taken at once.
func (s *Slots) SetNodeSlots(ctx context.Context, node string, limit *int, clock func() time.Time) (domain.SlotPass, error) {
	var p domain.SlotPass
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		fleet, now, err := s.lockLimit(ctx, tx, clock)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO runner_node_turn_slots (node, slots, reported_at) VALUES ($1, $2, $3)
			ON CONFLICT (node) DO UPDATE SET slots = EXCLUDED.slots, reported_at = EXCLUDED.reported_at`, node, limit, now); err != nil {
			return fmt.Errorf("set the turn slots of runner node %s: %w", node, err)
		}
		_, _, p, err = s.pass(ctx, tx, fleet, now, 0)
		return err
	})
	return p, err
}

// readNodeSlots reads the nodes' own limits and the slots in use on each.
func readNodeSlots(ctx context.Context, db queryer) (domain.NodeSlots, error) {
	rows, err := db.Query(ctx, `
		SELECT n.node, n.slots, (SELECT count(*) FROM turn_slots t WHERE t.node = n.node)
		FROM runner_node_turn_slots n`)
	if err != nil {
		return nil, fmt.Errorf("read the runner nodes' turn slots: %w", err)
	}
	nodes := domain.NodeSlots{}
	var node string
	var slot domain.NodeSlot
	_, err = pgx.ForEachRow(rows, []any{&node, &slot.Limit, &slot.Held}, func() error {
		nodes[node] = slot
		slot = domain.NodeSlot{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the runner nodes' turn slots: %w", err)
	}
	return nodes, nil
}

// ReleaseSlot implements app.SlotRepository.
func (s *Slots) ReleaseSlot(ctx context.Context, sessionID int64, clock func() time.Time) (domain.SlotPass, error) {
	var p domain.SlotPass
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		limit, now, err := s.lockLimit(ctx, tx, clock)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM turn_slots WHERE session_id = $1`, sessionID); err != nil {
			return fmt.Errorf("release the turn slot of session %d: %w", sessionID, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM turn_slot_waiters WHERE session_id = $1`, sessionID); err != nil {
			return fmt.Errorf("take session %d out of the slot line: %w", sessionID, err)
		}
		_, _, p, err = s.pass(ctx, tx, limit, now, 0)
		return err
	})
	return p, err
}

// PassSlots implements app.SlotRepository.
func (s *Slots) PassSlots(ctx context.Context, clock func() time.Time) (domain.SlotPass, error) {
	var p domain.SlotPass
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		limit, now, err := s.lockLimit(ctx, tx, clock)
		if err != nil {
			return err
		}
		_, _, p, err = s.pass(ctx, tx, limit, now, 0)
		return err
	})
	return p, err
}

// SetSlotLimit implements app.SlotRepository: the admin's limit (nil: the
// environment's again), then a pass, so raised slots are taken at once.
func (s *Slots) SetSlotLimit(ctx context.Context, admin *int, clock func() time.Time) (domain.SlotPass, error) {
	var p domain.SlotPass
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		_, now, err := s.lockLimit(ctx, tx, clock)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE turn_slot_limit SET slots = $1, updated_at = $2`, admin, now); err != nil {
			return fmt.Errorf("set the turn slot limit: %w", err)
		}
		limit := domain.EffectiveSlotLimit(admin, s.environment)
		_, _, p, err = s.pass(ctx, tx, limit, now, 0)
		return err
	})
	return p, err
}

// SlotUsage implements app.SlotRepository.
func (s *Slots) SlotUsage(ctx context.Context) (app.SlotUsage, error) {
	var u app.SlotUsage
	var admin *int
	err := s.pool.QueryRow(ctx, `
		SELECT l.slots, (SELECT count(*) FROM turn_slots)
		FROM turn_slot_limit l`).Scan(&admin, &u.InUse)
	if err != nil {
		return app.SlotUsage{}, fmt.Errorf("read the turn slots: %w", err)
	}
	u.Limit = domain.EffectiveSlotLimit(admin, s.environment)
	if u.Nodes, err = readNodeSlots(ctx, s.pool); err != nil {
		return app.SlotUsage{}, err
	}
	line, err := readLine(ctx, s.pool)
	if err != nil {
		return app.SlotUsage{}, err
	}
	for _, c := range line {
		if c.Asleep {
			u.SpotSleepers++
		} else {
			u.WaitingTurns++
		}
	}
	return u, nil
}

// SlotLine implements app.SlotRepository: the line as it stands, ranked.
// A waiting turn whose node is at its own limit waits for that.
func (s *Slots) SlotLine(ctx context.Context) ([]domain.SlotCandidate, error) {
	line, err := readLine(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	nodes, err := readNodeSlots(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	for i := range line {
		line[i].NodeFull = !line[i].Asleep && nodes.Full(line[i].Node)
	}
	domain.RankSlotQueue(line)
	return line, nil
}

func (s *Slots) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	if err := pgx.BeginFunc(ctx, s.pool, fn); err != nil {
		return interpretSlotErr(err)
	}
	return nil
}

// interpretSlotErr makes a serialization failure or deadlock a
// domain.ErrConflict (safe to retry); the caller's activity retries it.
func interpretSlotErr(err error) error {
	var pre *domain.PreconditionError
	var nf *domain.NotFoundError
	if errors.As(err, &pre) || errors.As(err, &nf) {
		return err
	}
	if pgdb.Retryable(err) {
		return fmt.Errorf("%w: %w", domain.ErrConflict, err)
	}
	return err
}

// lockLimit locks the limit row: one pass at a time, fleet-wide. It reads
// the clock once the lock is held, so that a pass that waited for it never
// dates its grants before the pass that went first.
func (s *Slots) lockLimit(ctx context.Context, tx pgx.Tx, clock func() time.Time) (domain.SlotLimit, time.Time, error) {
	var admin *int
	if err := tx.QueryRow(ctx, `SELECT slots FROM turn_slot_limit FOR UPDATE`).Scan(&admin); err != nil {
		return domain.SlotLimit{}, time.Time{}, fmt.Errorf("lock the turn slot limit: %w", err)
	}
	return domain.EffectiveSlotLimit(admin, s.environment), clock(), nil
}

// pass is one pass of the scheduler under the limit's lock: slots no turn
// can be using any more are taken back, the line is ranked, and the free
// slots go to its head (domain.PlanSlotPass); each waiting turn granted
// says so on its timeline, but fresh's (granted at the ask that put it in
// line: it never waited). held is the slots in use before the grants;
// nodes the nodes' own limits and use, as the pass found them.
func (s *Slots) pass(ctx context.Context, tx pgx.Tx, limit domain.SlotLimit, now time.Time, fresh int64) (int, domain.NodeSlots, domain.SlotPass, error) {
	rows, err := tx.Query(ctx, `
		SELECT t.session_id, t.turn_id, t.granted_at, s.status,
			COALESCE((s.markers->>'blocked_on_elicitation')::boolean, false), s.scheduling_class, s.precedence
		FROM turn_slots t JOIN sessions s ON s.id = t.session_id`)
	if err != nil {
		return 0, nil, domain.SlotPass{}, fmt.Errorf("read the turn slots in use: %w", err)
	}
	held, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.HeldSlot, error) {
		var h domain.HeldSlot
		err := r.Scan(&h.SessionID, &h.TurnID, &h.GrantedAt, &h.Status, &h.Blocked, &h.Class, &h.Precedence)
		return h, err
	})
	if err != nil {
		return 0, nil, domain.SlotPass{}, fmt.Errorf("read the turn slots in use: %w", err)
	}
	var abandoned []int64
	var unresumed []domain.SlotCandidate
	for _, h := range held {
		if !h.Abandoned(now) && h.AwaitsResume() {
			unresumed = append(unresumed, domain.SlotCandidate{SessionID: h.SessionID, Class: h.Class, Precedence: h.Precedence,
				Since: h.GrantedAt, Asleep: true})
		}
		if h.Abandoned(now) {
			abandoned = append(abandoned, h.SessionID)
			line := fmt.Sprintf("[Slots] turn slot taken back: the session has not been running since %s, so no turn of it uses the slot",
				h.GrantedAt.UTC().Format(time.RFC3339))
			if err := timelineWarning(ctx, tx, h.SessionID, now, line); err != nil {
				return 0, nil, domain.SlotPass{}, err
			}
		}
	}
	if len(abandoned) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM turn_slots WHERE session_id = ANY($1)`, abandoned); err != nil {
			return 0, nil, domain.SlotPass{}, fmt.Errorf("take abandoned turn slots back: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `
		DELETE FROM turn_slot_waiters w USING sessions s
		WHERE s.id = w.session_id AND s.status IN ($1, $2)`, domain.StatusFailed, domain.StatusArchived); err != nil {
		return 0, nil, domain.SlotPass{}, fmt.Errorf("drop the slot line's ended sessions: %w", err)
	}
	line, err := readLine(ctx, tx)
	if err != nil {
		return 0, nil, domain.SlotPass{}, err
	}
	domain.RankSlotQueue(line)
	inUse := len(held) - len(abandoned)
	nodes, err := readNodeSlots(ctx, tx)
	if err != nil {
		return 0, nil, domain.SlotPass{}, err
	}
	p := domain.PlanSlotPass(limit, inUse, nodes, line)
	p.Resume = append(p.Resume, unresumed...)
	for _, g := range p.Granted {
		if _, err := tx.Exec(ctx, `
			INSERT INTO turn_slots (session_id, turn_id, granted_at, node) VALUES ($1, $2, $3, $4)
			ON CONFLICT (session_id) DO NOTHING`, g.SessionID, g.TurnID, now, g.Node); err != nil {
			return 0, nil, domain.SlotPass{}, fmt.Errorf("grant session %d a turn slot: %w", g.SessionID, err)
		}
		if g.Asleep {
			continue
		}
		if _, err := tx.Exec(ctx, `DELETE FROM turn_slot_waiters WHERE session_id = $1`, g.SessionID); err != nil {
			return 0, nil, domain.SlotPass{}, fmt.Errorf("take session %d out of the slot line: %w", g.SessionID, err)
		}
		if g.SessionID != fresh {
			if err := timelineNote(ctx, tx, g.SessionID, now, domain.SlotGrantedLine(g.TurnID, now.Sub(g.Since))); err != nil {
				return 0, nil, domain.SlotPass{}, err
			}
		}
	}
	return inUse, nodes, p, nil
}

// queryer is a pool or a transaction.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// readLine reads the line for a slot, unranked: the turns waiting for one
// (of sessions that can still run), and the spot queue's sleepers — asleep
// with paused_by spot_queue, holding no slot, and not asleep on a
// wall-clock wake, which outranks the queue (session-lifecycle.md, "A
// pause outranks precedence").
func readLine(ctx context.Context, db queryer) ([]domain.SlotCandidate, error) {
	rows, err := db.Query(ctx, `
		SELECT w.session_id, w.turn_id, s.scheduling_class, s.precedence, w.since, false, w.node
		FROM turn_slot_waiters w JOIN sessions s ON s.id = w.session_id
		WHERE s.status NOT IN ($2, $3)
		UNION ALL
		SELECT s.id, '', s.scheduling_class, s.precedence, s.updated_at, true, ''
		FROM sessions s
		WHERE s.status = $4 AND s.markers->>'paused_by' = $1
			AND NOT EXISTS (SELECT 1 FROM turn_slots t WHERE t.session_id = s.id)
			AND NOT EXISTS (SELECT 1 FROM turn_slot_waiters w WHERE w.session_id = s.id)
			AND NOT EXISTS (SELECT 1 FROM wake_triggers k
				WHERE k.session_id = s.id AND k.kind = 'one_time' AND k.status = 'armed')`,
		domain.PausedBySpotQueue, domain.StatusFailed, domain.StatusArchived, domain.StatusWaiting)
	if err != nil {
		return nil, fmt.Errorf("read the slot line: %w", err)
	}
	line, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.SlotCandidate, error) {
		var c domain.SlotCandidate
		err := r.Scan(&c.SessionID, &c.TurnID, &c.Class, &c.Precedence, &c.Since, &c.Asleep, &c.Node)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the slot line: %w", err)
	}
	return line, nil
}

func timelineNote(ctx context.Context, tx pgx.Tx, sessionID int64, at time.Time, line string) error {
	return timelineLine(ctx, tx, sessionID, at, domain.TimelineNote, line)
}

func timelineWarning(ctx context.Context, tx pgx.Tx, sessionID int64, at time.Time, line string) error {
	return timelineLine(ctx, tx, sessionID, at, domain.TimelineWarning, line)
}

func timelineLine(ctx context.Context, tx pgx.Tx, sessionID int64, at time.Time, kind domain.TimelineKind, line string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO session_timeline (session_id, kind, message, created_at) VALUES ($1, $2, $3, $4)`,
		sessionID, kind, line, at); err != nil {
		return fmt.Errorf("write timeline of session %d: %w", sessionID, err)
	}
	return nil
}
