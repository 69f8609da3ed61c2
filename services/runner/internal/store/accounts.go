package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zimmerhq/zimmer/services/platform/pgdb"
	"github.com/zimmerhq/zimmer/services/runner/internal/domain"
)

// Accounts keeps the login pools' state (agent_accounts, account_turns,
// account_parks) so every runner node decides on the same accounts.
type Accounts struct{ pool *pgxpool.Pool }

// NewAccounts returns the pools' store.
func NewAccounts(pool *pgxpool.Pool) *Accounts { return &Accounts{pool: pool} }

// querier is what reading the pool's use needs: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Use reads each account's use at now: its wall's rest, its turns against
// its targets and its recent turns.
func (s *Accounts) Use(ctx context.Context, accounts []domain.Account, now time.Time) ([]domain.AccountUse, error) {
	return use(ctx, s.pool, accounts, now)
}

func use(ctx context.Context, q querier, accounts []domain.Account, now time.Time) ([]domain.AccountUse, error) {
	out := make([]domain.AccountUse, 0, len(accounts))
	for _, a := range accounts {
		u := domain.AccountUse{Account: a}
		err := q.QueryRow(ctx, `SELECT rests_until, wall_reason FROM agent_accounts
			WHERE runtime = $1 AND name = $2 AND rests_until > $3`, a.Runtime, a.Name, now).Scan(&u.RestsUntil, &u.WallReason)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("read the rest of %s account %q: %w", a.Runtime, a.Name, err)
		}
		if u.Recent, err = turnsSince(ctx, q, a, now.Add(-domain.UsageWindowOf(a))); err != nil {
			return nil, err
		}
		for _, t := range a.Targets {
			tu := domain.TargetUse{Target: t}
			if tu.Turns, err = turnsSince(ctx, q, a, now.Add(-t.Window)); err != nil {
				return nil, err
			}
			if tu.Turns >= t.MaxTurns {
				// The MaxTurns-th most recent turn leaving the window brings
				// the count under the target.
				var started time.Time
				err := q.QueryRow(ctx, `SELECT started_at FROM account_turns
					WHERE runtime = $1 AND account = $2 AND started_at > $3
					ORDER BY started_at DESC OFFSET $4 LIMIT 1`, a.Runtime, a.Name, now.Add(-t.Window), t.MaxTurns-1).Scan(&started)
				if err != nil {
					return nil, fmt.Errorf("read when %s account %q frees its target %s: %w", a.Runtime, a.Name, t, err)
				}
				tu.FreesAt = started.Add(t.Window)
			}
			u.Targets = append(u.Targets, tu)
		}
		out = append(out, u)
	}
	return out, nil
}

func turnsSince(ctx context.Context, q querier, a domain.Account, since time.Time) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM account_turns WHERE runtime = $1 AND account = $2 AND started_at > $3`,
		a.Runtime, a.Name, since).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count the turns of %s account %q: %w", a.Runtime, a.Name, err)
	}
	return n, nil
}

// ChooseRequest asks for the account turn TurnID of a session runs under.
type ChooseRequest struct {
	Runtime   string
	SessionID int64
	TurnID    string
	// Sticky is the account the session's conversation lives under ("" for
	// none yet).
	Sticky   string
	Accounts []domain.Account
	Now      time.Time
}

// Choose decides the turn's account (domain.ChooseAccount) and, when it
// runs, records the turn under it, in one transaction under the runtime's
// lock, so two nodes choosing at once both count each other's turns. A
// turn already recorded (the activity asked again) answers the account it
// was given.
func (s *Accounts) Choose(ctx context.Context, req ChooseRequest) (domain.Choice, error) {
	var c domain.Choice
	err := pgdb.InTx(ctx, s.pool, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('zimmer.runner.accounts/' || $1, 0))`, req.Runtime); err != nil {
			return fmt.Errorf("lock the %s login pool: %w", req.Runtime, err)
		}
		var had string
		err := tx.QueryRow(ctx, `SELECT account FROM account_turns WHERE turn_id = $1`, req.TurnID).Scan(&had)
		if err == nil {
			c = domain.Choice{Run: true, Account: had}
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read the account of turn %s: %w", req.TurnID, err)
		}
		pool, err := use(ctx, tx, req.Accounts, req.Now)
		if err != nil {
			return err
		}
		c = domain.ChooseAccount(req.Runtime, pool, req.Sticky, req.Now)
		if !c.Run {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO account_turns (turn_id, session_id, runtime, account, started_at)
			VALUES ($1, $2, $3, $4, $5)`, req.TurnID, req.SessionID, req.Runtime, c.Account, req.Now)
		if err != nil {
			return fmt.Errorf("record turn %s under %s account %q: %w", req.TurnID, req.Runtime, c.Account, err)
		}
		return nil
	})
	return c, err
}

// TurnAccount is the account a turn ran under ("" when it ran under none,
// or before pools were kept).
func (s *Accounts) TurnAccount(ctx context.Context, turnID string) (string, error) {
	var a string
	err := s.pool.QueryRow(ctx, `SELECT account FROM account_turns WHERE turn_id = $1`, turnID).Scan(&a)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the account of turn %s: %w", turnID, err)
	}
	return a, nil
}

// RecordWall rests an account until until (a later rest already recorded
// stands), saying why.
func (s *Accounts) RecordWall(ctx context.Context, runtime, account string, until time.Time, reason string, now time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO agent_accounts (runtime, name, rests_until, wall_reason, updated_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (runtime, name) DO UPDATE SET
			rests_until = GREATEST(agent_accounts.rests_until, EXCLUDED.rests_until),
			wall_reason = EXCLUDED.wall_reason, updated_at = EXCLUDED.updated_at`,
		runtime, account, until, reason, now)
	if err != nil {
		return fmt.Errorf("rest %s account %q until %s: %w", runtime, account, until, err)
	}
	return nil
}

// Park records a session parked on an account (again: the latest park
// stands).
func (s *Accounts) Park(ctx context.Context, p domain.PoolPark) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO account_parks (session_id, runtime, account, reason, until, parked_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (session_id) DO UPDATE SET runtime = EXCLUDED.runtime, account = EXCLUDED.account,
			reason = EXCLUDED.reason, until = EXCLUDED.until, parked_at = EXCLUDED.parked_at`,
		p.SessionID, p.Runtime, p.Account, p.Reason, p.Until, p.ParkedAt)
	if err != nil {
		return fmt.Errorf("record session %d parked on %s account %q: %w", p.SessionID, p.Runtime, p.Account, err)
	}
	return nil
}

// Unpark forgets a session's park; none is no error.
func (s *Accounts) Unpark(ctx context.Context, sessionID int64) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM account_parks WHERE session_id = $1`, sessionID); err != nil {
		return fmt.Errorf("forget the park of session %d: %w", sessionID, err)
	}
	return nil
}

// ParkedOn lists the sessions parked on an account, longest parked first.
func (s *Accounts) ParkedOn(ctx context.Context, runtime, account string) ([]domain.PoolPark, error) {
	rows, err := s.pool.Query(ctx, `SELECT session_id, runtime, account, reason, until, parked_at FROM account_parks
		WHERE runtime = $1 AND account = $2 ORDER BY parked_at, session_id`, runtime, account)
	if err != nil {
		return nil, fmt.Errorf("list the sessions parked on %s account %q: %w", runtime, account, err)
	}
	ids, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.PoolPark, error) {
		var p domain.PoolPark
		err := row.Scan(&p.SessionID, &p.Runtime, &p.Account, &p.Reason, &p.Until, &p.ParkedAt)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("list the sessions parked on %s account %q: %w", runtime, account, err)
	}
	return ids, nil
}

// ParkedCounts counts the sessions parked on each account, by runtime and
// name.
func (s *Accounts) ParkedCounts(ctx context.Context) (map[[2]string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT runtime, account, count(*) FROM account_parks GROUP BY runtime, account`)
	if err != nil {
		return nil, fmt.Errorf("count the parked sessions: %w", err)
	}
	defer rows.Close()
	out := map[[2]string]int{}
	for rows.Next() {
		var rt, a string
		var n int
		if err := rows.Scan(&rt, &a, &n); err != nil {
			return nil, fmt.Errorf("count the parked sessions: %w", err)
		}
		out[[2]string{rt, a}] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count the parked sessions: %w", err)
	}
	return out, nil
}

// PruneTurns deletes turn records that started before cutoff, at most
// limit of them: the pool counts only turns within its windows.
func (s *Accounts) PruneTurns(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM account_turns WHERE turn_id IN (
		SELECT turn_id FROM account_turns WHERE started_at < $1 ORDER BY started_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("prune the turn records before %s: %w", cutoff, err)
	}
	return tag.RowsAffected(), nil
}
