package store

import (
	"context"
	"fmt"
	"time"
)

// Backlog is what waits in every session's queue.
type Backlog struct {
	Pending int64
	// OldestAge is how long the oldest pending message has waited (0 with
	// none).
	OldestAge time.Duration
}

// PendingBacklog reads the queue's backlog across sessions (through the
// enqueued_messages_pending index), for the metrics.
func (m *Messages) PendingBacklog(ctx context.Context) (Backlog, error) {
	var b Backlog
	var age float64
	err := m.pool.QueryRow(ctx, `
		SELECT count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8
		FROM enqueued_messages WHERE status = 'pending'`).Scan(&b.Pending, &age)
	if err != nil {
		return Backlog{}, fmt.Errorf("read the queue's backlog: %w", err)
	}
	b.OldestAge = time.Duration(max(age, 0) * float64(time.Second))
	return b, nil
}
