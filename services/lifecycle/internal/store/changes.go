package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/zimmerhq/zimmer/services/lifecycle/internal/app"
	"github.com/zimmerhq/zimmer/services/lifecycle/internal/domain"
)

var _ app.SessionChangeFeed = (*Sessions)(nil)

// sessionEventsLock is the transaction-scoped advisory lock a transition
// takes before it writes its event-stream entries, and holds until it
// commits. bigserial hands out ids in the order transactions ask, not the
// order they commit, so without it a watcher could read id 11, move its
// cursor past 10 and never see 10 commit. Under the lock an id is drawn
// only once every smaller one has committed or rolled back, so the ids
// order the entries as they committed and a cursor is exact. It is held
// for the last round trip of a transition only (the entries, the flags,
// COMMIT, sent as one batch), after the session's row lock: two
// transitions of one session never wait on each other under it.
const sessionEventsLock = "lifecycle.session_events"

// changeSignal wakes the watches of this process when it commits a change:
// closing a channel wakes every waiter at once, and a waiter that has gone
// leaves nothing behind.
type changeSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newChangeSignal() *changeSignal { return &changeSignal{ch: make(chan struct{})} }

func (s *changeSignal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *changeSignal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.ch)
	s.ch = make(chan struct{})
}

// SessionChanged implements app.SessionChangeFeed.
func (s *Sessions) SessionChanged() <-chan struct{} { return s.changed.wait() }

// LatestSessionChange implements app.SessionChangeFeed.
func (s *Sessions) LatestSessionChange(ctx context.Context) (int64, error) {
	var id int64
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(max(id), 0) FROM session_events`).Scan(&id); err != nil {
		return 0, fmt.Errorf("read the newest session event: %w", err)
	}
	return id, nil
}

// SessionChangesAfter implements app.SessionChangeFeed: the "transition"
// entries of every session's event stream, by id.
func (s *Sessions) SessionChangesAfter(ctx context.Context, after int64, limit int) ([]domain.SessionChange, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, session_id, COALESCE(payload->>'from', ''), COALESCE(payload->>'to', ''),
			ARRAY(SELECT jsonb_array_elements_text(COALESCE(payload->'events', '[]'::jsonb))), created_at
		FROM session_events WHERE id > $1 AND name = 'transition' ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read session changes: %w", err)
	}
	changes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.SessionChange, error) {
		var c domain.SessionChange
		err := r.Scan(&c.EventID, &c.SessionID, &c.From, &c.To, &c.Events, &c.OccurredAt)
		c.OccurredAt = c.OccurredAt.UTC()
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read session changes: %w", err)
	}
	return changes, nil
}
