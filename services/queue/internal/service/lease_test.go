package service_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
)

// While lifecycle's DeliverTurn runs, the queue holds nothing open in its
// database — no transaction (pg_stat_activity), no lock on the session's
// queue row (FOR UPDATE NOWAIT from another connection goes through), no
// pooled connection — on each path that delivers a queued message: send
// now, interrupt and the turn-end hand-over.
func TestNoTransactionIsOpenDuringDeliverTurn(t *testing.T) {
	t.Parallel()
	h := startHarness(t, roster()...)
	pool := h.svc.Pool
	var (
		mu     sync.Mutex
		checks []string
	)
	held := func(ctx context.Context, sessionID int64) error {
		if n := pool.Stat().AcquiredConns(); n != 0 {
			return fmt.Errorf("%d pooled connections are held", n)
		}
		var open int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
			  AND xact_start IS NOT NULL`).Scan(&open); err != nil {
			return err
		}
		if open != 0 {
			return fmt.Errorf("%d transactions are open", open)
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, `SELECT 1 FROM session_queues WHERE session_id = $1 FOR UPDATE NOWAIT`, sessionID); err != nil {
			return fmt.Errorf("the session's queue row is locked: %w", err)
		}
		_, err = tx.Exec(ctx, `SELECT 1 FROM enqueued_messages WHERE session_id = $1 FOR UPDATE NOWAIT`, sessionID)
		if err != nil {
			return fmt.Errorf("a message row is locked: %w", err)
		}
		return nil
	}
	var failures []error
	h.lifecycle.setDeliverHook(func(req *lifecyclev1.DeliverTurnRequest) error {
		err := held(t.Context(), req.GetSessionId())
		mu.Lock()
		defer mu.Unlock()
		checks = append(checks, req.GetMode().String())
		failures = append(failures, err)
		return nil
	})

	now := h.enqueue(t, 1, "send me now")
	resp, err := h.queue.SendEnqueuedMessageNow(t.Context(), &queuev1.SendEnqueuedMessageNowRequest{SessionId: "1", MessageId: now.GetId()})
	require.NoError(t, err)
	require.True(t, resp.GetDelivered())

	interrupt, next := h.enqueue(t, 2, "interrupt with me"), h.enqueue(t, 2, "hand me over")
	ir, err := h.queue.InterruptWithEnqueuedMessage(t.Context(), &queuev1.InterruptWithEnqueuedMessageRequest{SessionId: "2", MessageId: interrupt.GetId()})
	require.NoError(t, err)
	require.True(t, ir.GetInterrupted())
	hr, err := h.internal.DeliverNextMessage(t.Context(), &queuev1.DeliverNextMessageRequest{SessionId: 2, FromJobId: h.lifecycle.session(2).RunningJobID})
	require.NoError(t, err)
	require.True(t, hr.GetDelivered())
	require.Equal(t, next.GetId(), hr.GetEnqueuedMessage().GetId())

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"DELIVERY_MODE_IDLE", "DELIVERY_MODE_AFTER_INTERRUPT", "DELIVERY_MODE_HANDOVER"}, checks)
	require.NoError(t, errors.Join(failures...))
}
