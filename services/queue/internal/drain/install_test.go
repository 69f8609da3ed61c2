package drain_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
	"github.com/zimmerhq/zimmer/services/platform/servicetest"
	"github.com/zimmerhq/zimmer/services/platform/slogx"
	"github.com/zimmerhq/zimmer/services/platform/temporalx"
	"github.com/zimmerhq/zimmer/services/queue/internal/drain"
)

// signalingDeliverer delivers every time and reports each call.
type signalingDeliverer struct{ calls chan int64 }

func (d signalingDeliverer) DeliverPending(_ context.Context, id int64) (bool, error) {
	d.calls <- id
	return true, nil
}

func (signalingDeliverer) Abandon(context.Context, int64) (int, error) { return 0, nil }

// countingLifecycle counts every attempt.
type countingLifecycle struct{}

func (countingLifecycle) RecordDrainAttempt(context.Context, int64) (drain.Attempt, error) {
	return drain.Attempt{Counted: true, Attempts: 1}, nil
}

// memorySeals holds seals in memory and reports each unseal.
type memorySeals struct {
	mu       sync.Mutex
	held     map[int64]string
	unsealed chan int64
}

func (m *memorySeals) StaleSeals(context.Context, time.Time) (map[int64]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int64]string, len(m.held))
	for id, by := range m.held {
		out[id] = by
	}
	return out, nil
}

func (m *memorySeals) Unseal(_ context.Context, id int64, by string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[id] == by {
		delete(m.held, id)
		m.unsealed <- id
	}
	return nil
}

// On the real Temporal dev server: Install registers what the worker needs,
// a poke starts the session's drain, which delivers after its delay; and
// the stale-seal schedule, triggered, runs the sweep.
func TestInstallDrainsAPokedSessionOnTemporal(t *testing.T) {
	t.Parallel()
	addr := servicetest.TemporalAddress(t)
	ctx, cancel := context.WithTimeout(context.Background(), servicetest.Timeout)
	defer cancel()
	c, err := temporalx.Dial(ctx, addr, "default", slogx.Discard())
	require.NoError(t, err)
	t.Cleanup(c.Close)

	// A service of its own, so the task queue and schedule are this test's
	// alone on the shared server; a session id no other test uses.
	service := "queuedraintest-" + uuid.NewString()[:8]
	session := time.Now().UnixNano()
	delivered := make(chan int64, 4)
	seals := &memorySeals{held: map[int64]string{session: "attempt-that-died"}, unsealed: make(chan int64, 1)}
	w := temporalx.NewWorker(c, service)
	starter, err := drain.Install(ctx, c, w, drain.Deps{
		Lifecycle: countingLifecycle{},
		Deliverer: signalingDeliverer{calls: delivered},
		Sessions:  &fakeSessions{statuses: map[int64]string{session: rules.StatusWaiting}},
		Seals:     seals,
		Claims:    noClaims{},
		Logger:    slogx.Discard(),
		Service:   service,
		Delay:     time.Second,
	})
	require.NoError(t, err)
	schedule := c.ScheduleClient().GetHandle(ctx, service+"-stale-seals")
	t.Cleanup(func() { _ = schedule.Delete(context.Background()) })
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	poked := time.Now()
	require.NoError(t, starter.Poke(ctx, session))
	select {
	case got := <-delivered:
		require.Equal(t, session, got)
		require.GreaterOrEqual(t, time.Since(poked), time.Second, "not before the delay")
	case <-ctx.Done():
		t.Fatal("the poked drain never delivered")
	}
	var outcome drain.Outcome
	require.NoError(t, c.GetWorkflow(ctx, drain.WorkflowID(session), "").Get(ctx, &outcome))
	require.Equal(t, drain.OutcomeDelivered, outcome)

	described, err := c.DescribeWorkflow(ctx, drain.WorkflowID(session), "")
	require.NoError(t, err)
	desc := described.RawResponse
	require.Equal(t, temporalx.TaskQueue(service), desc.GetExecutionConfig().GetTaskQueue().GetName())
	var memo int64
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(desc.GetWorkflowExecutionInfo().GetMemo().GetFields()["session_id"], &memo))
	require.Equal(t, session, memo)

	// The drain ended; a new poke starts a new one (the id is reusable).
	require.NoError(t, starter.Poke(ctx, session))
	select {
	case <-delivered:
	case <-ctx.Done():
		t.Fatal("a poke after the drain ended started no new drain")
	}

	require.NoError(t, schedule.Trigger(ctx, client.ScheduleTriggerOptions{}))
	select {
	case got := <-seals.unsealed:
		require.Equal(t, session, got)
	case <-ctx.Done():
		t.Fatal("the triggered sweep never unsealed the stale seal")
	}
}

// noClaims is a queue with no claim expired.
type noClaims struct{}

func (noClaims) ExpiredClaims(context.Context, time.Time) ([]int64, error) { return nil, nil }

func (noClaims) ReleaseExpiredClaim(context.Context, int64, time.Time) (bool, error) {
	return false, nil
}
